"""Symbolic sizes: canonical forms, simplification, parsing and evaluation."""
import pytest

from onemodel.core.symbolic import Dim, SymbolicError, evaluate


def test_canonical_and_simplified():
    b, s = Dim.symbol("batch"), Dim.symbol("seq")
    assert (b * 6) // b == 6
    assert b * 2 == 2 * b
    assert (b * s * 2) // s == b * 2
    assert b - b == 0
    assert (b * 4) % 2 == 0
    assert str(b * 2 + 1) == "batch*2 + 1"
    assert str((s + 1) // 2) == "((seq + 1)//2)"


@pytest.mark.parametrize("expr", ["batch*2", "batch*seq - 3", "(seq//2)*batch + 1", "((seq + 1)%2)",
                                  "-batch"])
def test_parse_round_trip(expr):
    d = Dim.parse(expr)
    assert str(d) == expr
    assert Dim.parse(str(d)) == d


def test_evaluate():
    b, s = Dim.symbol("batch"), Dim.symbol("seq")
    e = (s // 2) * b + 1
    assert evaluate(e, {"batch": 3, "seq": 5}) == 7
    with pytest.raises(SymbolicError, match="seq"):
        evaluate(e, {"batch": 3})


def test_no_truth_value_and_no_code_in_parse():
    with pytest.raises(SymbolicError):
        bool(Dim.symbol("batch"))
    for bad in ["__import__('os')", "batch.real", "batch / 2", "1.5"]:
        with pytest.raises(SymbolicError):
            Dim.parse(bad)


def test_nested_floor_divisions_print_and_parse_back():
    # two stacked stride-2 windows: ((seq - 3)//2 + 1 - 3)//2 + 1 used to print as
    # "(((seq - 3)//2) - 2//2) + 1", which parses back as something else
    s = Dim.symbol("seq")
    first = (s - 3) // 2 + 1
    second = (first - 3) // 2 + 1
    for d in (second, Dim.min(second, 4), (second - 1) % 3, ((s // 2 - 1) // 2 - 1) // 2):
        back = Dim.parse(str(d))
        assert back == d, (str(d), str(back))
        assert all(evaluate(back, {"seq": n}) == evaluate(d, {"seq": n}) for n in range(1, 40))


# -- issue 25: an engine that proves what it can ---------------------------------------------------
def _same_everywhere(d, ref, names, sizes=range(1, 30)):
    import itertools

    for values in itertools.product(sizes, repeat=len(names)):
        env = dict(zip(names, values))
        assert evaluate(d, env) == ref(**env), (str(d), env)


def test_common_factors_cancel():
    f, n, m = Dim.symbol("f"), Dim.symbol("n"), Dim.symbol("m")
    assert (f * 1024 + 1024) // (f + 1) == 1024           # the flattened conv stack of issue 25
    assert (n * m + m) // (m * 2) == (n + 1) // 2
    assert (n * 2 + 2) // (n * 4 + 4) == 0                # the quotient is the constant 1/2
    assert (n * m) // n == m and (n * m) % n == 0
    assert (n * m * 3) % (n * 2) == n * ((m * 3) % 2)
    assert ((n + 1) * (m + 2)) // (m + 2) == n + 1


def test_min_and_max_against_the_size_range():
    from onemodel.core.symbolic import MAX_SIZE

    n = Dim.symbol("n")
    assert Dim.min(n, MAX_SIZE) == n and Dim.min(n, 10 ** 18) == n
    assert Dim.max(n, MAX_SIZE) == MAX_SIZE
    assert isinstance(Dim.min(n, MAX_SIZE - 1), Dim)     # n may be 2**40: not provable
    assert Dim.min(n, 0) == 0 and Dim.max(n, 1) == n
    assert Dim.min(n // 2, n) == n // 2


def test_floor_division_identities():
    a, b, c = Dim.symbol("a"), Dim.symbol("b"), Dim.symbol("c")
    assert (a // 2) // 3 == a // 6
    assert (a // b) // c == a // (b * c)
    for k in range(1, 6):
        for r in range(k):
            assert (a * k + r) // k == a
            assert (a * k + r) % k == r
    assert (a * 4 + 6) // 4 == a + 1
    assert (a - 1) // 2 ** 41 == 0 and (a - 1) % 2 ** 41 == a - 1
    assert a // (a + 1) == 0 and (a - 1) % a == a - 1
    assert (a * 3 + 5) // -2 == (-(a * 3) - 5) // 2       # a negative divisor flips both signs
    _same_everywhere(((a // 2) - 2) // 3, lambda a: ((a // 2) - 2) // 3, ["a"], range(1, 80))


def test_equal_expressions_compare_equal():
    s = Dim.symbol("seq")
    assert (s - 3) // 2 + 1 == (s - 1) // 2              # a kernel-3 window, two ways
    assert (s + 4) // 2 == s // 2 + 2
    assert ((s - 3) // 2 + 1 - 3) // 2 + 1 == (s - 7) // 4 + 1
    assert (((s - 1) // 2) // 2) // 2 == (s - 1) // 8
    assert hash((s - 3) // 2 + 1) == hash((s - 1) // 2)


def test_a_constant_for_every_size_is_that_constant():
    from onemodel.core.symbolic import MAX_SIZE

    n, m = Dim.symbol("n"), Dim.symbol("m")
    assert n // (MAX_SIZE + 1) == 0
    assert Dim.min(n % 4, 3) == n % 4 and Dim.min(n % 4, 5) == n % 4
    assert (n % 4) // 4 == 0 and Dim.max(n % 3, 2) == 2
    assert (m * n + n) // (n * (m + 1)) == 1


def _mn(x, y):
    return Dim.min(x, y) if isinstance(x, Dim) or isinstance(y, Dim) else min(x, y)


def _mx(x, y):
    return Dim.max(x, y) if isinstance(x, Dim) or isinstance(y, Dim) else max(x, y)


@pytest.mark.parametrize("fn", [
    lambda a: ((a // 2) - 2) // 3, lambda a: (a // 2 - 2) % 3, lambda a: _mn(a // 2 - 2, 5) // 3,
    lambda a: (a * 3) // (a + 2), lambda a: a % (a // 3 + 1), lambda a: -(a // 2) * 3 + 1,
    lambda a: (-a + 3) // 5, lambda a: _mx(-a, -7) // 2, lambda a: (a - 9) % (a - 4),
    lambda a: _mn(a, 7) * (a // 2) - a % 3])
def test_printing_keeps_the_parentheses_it_needs(fn):
    d = fn(Dim.symbol("a"))
    back = Dim.parse(str(d))
    assert back == d and str(back) == str(d), (str(d), str(back))
    for n in range(1, 60):
        try:
            want = fn(n)
        except ZeroDivisionError:
            continue
        assert evaluate(back, {"a": n}) == want, (str(d), n)
