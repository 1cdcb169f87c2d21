"""engine.safe_expr: the whitelist evaluator behind custom-kernel restrictions, sizes and references."""
import numpy as np
import pytest

from engine.safe_expr import MAX_DEPTH, ExprError, evaluate_int, parse

NAMES = {"block_size_x", "tile", "N"}
VALUES = {"block_size_x": 128, "tile": 4, "N": 1000}


def value_of(text, values=VALUES):
    return parse(text, set(values)).evaluate(values)


@pytest.mark.parametrize("text, expected", [
    ("block_size_x * tile <= 1024", True),
    ("block_size_x * tile > 1024", False),
    ("ceil_div(N, block_size_x * tile)", 2),
    ("min(block_size_x, 64) + max(tile, 8)", 72),
    ("N // 3 % 7 - -2 ** 3", 333 % 7 + 8),
    ("N / 8", 125.0),
    ("32 <= block_size_x < 256 and not tile == 3", True),
    ("tile == 2 or block_size_x == 128", True),
    ("tile if N > 10 else 0", 4),
    ("2 ** 10", 1024),
])
def test_it_evaluates_the_whitelisted_arithmetic(text, expected):
    assert value_of(text) == expected


def test_evaluate_int_gives_launch_sizes_and_rejects_fractions():
    assert evaluate_int("ceil_div(N, 256)", {"N": 1000}) == 4
    assert evaluate_int("N / 8", {"N": 1000}) == 125
    with pytest.raises(ExprError, match="not an integer"):
        evaluate_int("N / 3", {"N": 1000}, "grid")


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os')", "function '__import__' is not allowed"),
    ("__import__('os').system('true')", "only plain function names can be called"),
    ("N.__class__", "attribute access is not allowed: 'N.__class__'"),
    ("(lambda: 1)()", "only plain function names can be called"),
    ("lambda: 1", "lambda is not allowed"),
    ("[x for x in N]", "comprehension is not allowed"),
    ("N[0]", "subscript is not allowed"),
    ("'text'", "only numbers are allowed as constants"),
    ("open(N)", "function 'open' is not allowed (allowed: ceil_div, max, min)"),
    ("eval('1')", "function 'eval' is not allowed"),
    ("min(*N)", "starred arguments are not allowed"),
    ("max(N, key=tile)", "keyword arguments are not allowed"),
    ("unknown_name + 1", "unknown name 'unknown_name' at column 1"),
    ("N @ tile", "operator MatMult is not allowed"),
    ("N << 40", "operator LShift is not allowed"),
    ("(x := 3)", "assignment (:=) is not allowed"),
    ("N +", "is not a valid expression"),
    ("", "empty expression"),
])
def test_it_rejects_hostile_or_unknown_input_naming_the_token(text, fragment):
    with pytest.raises(ExprError) as caught:
        parse(text, NAMES)
    assert fragment in str(caught.value)


def test_huge_exponents_are_refused_before_they_are_computed():
    with pytest.raises(ExprError, match="exponent 100000000 is larger than 64"):
        value_of("2 ** 100000000")
    with pytest.raises(ExprError, match="more than 256"):
        value_of("(N ** 64) ** 64")
    with pytest.raises(ExprError, match="more than 256"):
        value_of("9 ** 64 * 9 ** 64 * 9 ** 64")


def test_deep_nesting_and_long_text_are_refused():
    with pytest.raises(ExprError, match=f"nested more than {MAX_DEPTH} levels"):
        parse("-" * 100 + "N", NAMES)
    with pytest.raises(ExprError, match="is not a valid expression"):
        parse("(" * 300 + "N" + ")" * 300, NAMES)
    with pytest.raises(ExprError, match="longer than 1000"):
        parse("N + " * 400 + "N", NAMES)


def test_division_by_zero_is_an_expression_error():
    with pytest.raises(ExprError, match="division by zero"):
        value_of("N // (tile - 4)")
    with pytest.raises(ExprError, match="ceil_div by zero"):
        value_of("ceil_div(N, tile - 4)")


def test_a_missing_value_is_named():
    with pytest.raises(ExprError, match="no value for tile"):
        parse("tile + 1", NAMES).evaluate({"N": 1})


def test_caller_supplied_functions_work_on_arrays():
    expr = parse("exp(a) + b * 2", {"a", "b"}, {"exp": np.exp})
    a, b = np.array([0.0, 1.0]), np.array([1.0, 2.0])
    np.testing.assert_allclose(expr.evaluate({"a": a, "b": b}), np.exp(a) + b * 2)
    with pytest.raises(ExprError, match="function 'sum' is not allowed"):
        parse("sum(a)", {"a"}, {"exp": np.exp})
