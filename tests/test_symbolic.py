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


@pytest.mark.parametrize("expr", ["batch*2", "batch*seq - 3", "(seq//2)*batch + 1", "((seq + 1)%2)", "-batch"])
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
