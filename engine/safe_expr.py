"""A small, safe evaluator for the expressions a user writes in a custom-kernel spec.

Restrictions (`block_size_x * block_size_y <= 1024`), launch sizes
(`ceil_div(N, block_size_x)`) and numpy references (`exp(a) + b`) are parsed
with Python's `ast` module and walked node by node against a whitelist:
numbers, the names the caller provides, `+ - * / // % **`, unary `- + not`,
comparisons (chained too), `and`/`or`, conditional expressions, and calls
of the functions the caller provides by plain name. Nothing else is accepted:
no attribute access, subscripts, lambdas, comprehensions, strings, keyword
arguments or starred arguments, and `eval` is never used. A rejected
expression raises `ExprError`, whose message names the offending token.

Size bounds keep a hostile expression from exhausting the host: the text
length, the number of nodes, the nesting depth, and `**` (an exponent of at
most MAX_EXPONENT, an integer result of at most MAX_RESULT_BITS bits).
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping

MAX_LENGTH = 1000
MAX_NODES = 500
MAX_DEPTH = 50
MAX_EXPONENT = 64
MAX_RESULT_BITS = 256


class ExprError(ValueError):
    """An expression that is not allowed, or that cannot be evaluated."""


def ceil_div(a, b):
    if b == 0:
        raise ExprError("ceil_div by zero")
    return -(-a // b)


# Functions for integer expressions: restrictions, grid and block sizes, FLOP counts.
INTEGER_FUNCTIONS: dict[str, Callable] = {"min": min, "max": max, "ceil_div": ceil_div}

_BINARY = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", None),  # bounded: see _power
}
_UNARY = {ast.USub: ("-", operator.neg), ast.UAdd: ("+", operator.pos), ast.Not: ("not", operator.not_)}
_COMPARE = {
    ast.Eq: ("==", operator.eq), ast.NotEq: ("!=", operator.ne), ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le), ast.Gt: (">", operator.gt), ast.GtE: (">=", operator.ge),
}
# Node kinds named in messages in the words a user knows them by.
_NODE_WORDS = {
    ast.Attribute: "attribute access", ast.Subscript: "subscript", ast.Lambda: "lambda",
    ast.ListComp: "comprehension", ast.GeneratorExp: "comprehension", ast.DictComp: "comprehension",
    ast.SetComp: "comprehension", ast.Constant: "constant", ast.List: "list", ast.Tuple: "tuple",
    ast.Dict: "dict", ast.Set: "set", ast.NamedExpr: "assignment (:=)", ast.JoinedStr: "f-string",
    ast.Starred: "starred argument", ast.Await: "await", ast.Yield: "yield", ast.Slice: "slice",
}


@dataclass(frozen=True)
class Expr:
    """A parsed, checked expression; `evaluate(names)` computes it."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    functions: Mapping[str, Callable]

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        missing = sorted(self.names - set(values))
        if missing:
            raise ExprError(f"{_short(self.text)}: no value for {', '.join(missing)}")
        try:
            return _Evaluator(values, self.functions, self.text).visit(self.tree.body)
        except ExprError:
            raise
        except ZeroDivisionError:
            raise ExprError(f"{_short(self.text)}: division by zero") from None
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ExprError(f"{_short(self.text)}: {exc}") from None

    def evaluate_int(self, values: Mapping[str, Any], what: str = "expression") -> int:
        """The value as an integer (a launch size, a shape, a FLOP count); ExprError otherwise."""
        value = self.evaluate(values)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ExprError(f"{what} {self.text!r} is {value!r}, not an integer")
        return value


def _short(text: str, limit: int = 60) -> str:
    """Text quoted for a message, cut to `limit` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _where(node: ast.AST, text: str) -> str:
    segment = ast.get_source_segment(text, node)
    column = getattr(node, "col_offset", None)
    at = f" at column {column + 1}" if column is not None else ""
    return f"{_short(segment)}{at}" if segment else at.strip()


def parse(text: str, allowed_names: set[str] | frozenset[str], functions: Mapping[str, Callable] | None = None) -> Expr:
    """Check `text` against the whitelist; names must be in `allowed_names`, calls in `functions`."""
    functions = INTEGER_FUNCTIONS if functions is None else functions
    if not isinstance(text, str):
        raise ExprError(f"an expression must be text, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression of {len(text)} characters is longer than {MAX_LENGTH}")
    if not text.strip():
        raise ExprError("empty expression")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"{_short(text)} is not a valid expression: {exc.msg} (column {exc.offset})") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"expression is nested more than {MAX_DEPTH} levels deep") from None
    text = text.strip()
    names: set[str] = set()
    _check(tree.body, text, set(allowed_names), functions, names, depth=1, count=[0])
    return Expr(text, tree, frozenset(names), functions)


def _check(node: ast.AST, text: str, allowed: set[str], functions: Mapping[str, Callable], names: set[str],
           depth: int, count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise ExprError(f"expression has more than {MAX_NODES} parts")
    if depth > MAX_DEPTH:
        raise ExprError(f"expression is nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"only numbers are allowed as constants, not {_where(node, text)}")
        return
    if isinstance(node, ast.Name):
        if node.id not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ExprError(f"unknown name {node.id!r} at column {node.col_offset + 1} (known names: {known})")
        names.add(node.id)
        return
    children: list[ast.AST]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        children = [node.operand]
    elif isinstance(node, ast.BoolOp):
        children = list(node.values)
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.IfExp):
        children = [node.test, node.body, node.orelse]
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise ExprError(f"only plain function names can be called, not {_where(node.func, text)}")
        if node.func.id not in functions:
            known = ", ".join(sorted(functions)) or "none"
            raise ExprError(f"function {node.func.id!r} is not allowed (allowed: {known})")
        if node.keywords:
            raise ExprError(f"keyword arguments are not allowed in {_where(node, text)}")
        children = list(node.args)
        for arg in children:
            if isinstance(arg, ast.Starred):
                raise ExprError(f"starred arguments are not allowed in {_where(node, text)}")
    else:
        word = _NODE_WORDS.get(type(node), type(node).__name__)
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            word = f"operator {type(getattr(node, 'op', None) or node.ops[0]).__name__}"
        raise ExprError(f"{word} is not allowed: {_where(node, text)}")
    for child in children:
        _check(child, text, allowed, functions, names, depth + 1, count)


def _power(base, exponent, text: str):
    if isinstance(exponent, (int, float)) and abs(exponent) > MAX_EXPONENT:
        raise ExprError(f"{_short(text)}: exponent {exponent} is larger than {MAX_EXPONENT}")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        bits = max(1, abs(base).bit_length()) * exponent
        if bits > MAX_RESULT_BITS:
            raise ExprError(f"{_short(text)}: {base} ** {exponent} would have about {bits} bits, more than {MAX_RESULT_BITS}")
    return base ** exponent


class _Evaluator:
    def __init__(self, values: Mapping[str, Any], functions: Mapping[str, Callable], text: str):
        self.values = values
        self.functions = functions
        self.text = text

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.values[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self.visit(node.left), self.visit(node.right)
            if isinstance(node.op, ast.Pow):
                return _power(left, right, self.text)
            result = _BINARY[type(node.op)][1](left, right)
            if isinstance(result, int) and result.bit_length() > MAX_RESULT_BITS:
                raise ExprError(f"{_short(self.text)}: an intermediate value has more than {MAX_RESULT_BITS} bits")
            return result
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)][1](self.visit(node.operand))
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result = True
                for value in node.values:
                    result = self.visit(value)
                    if not result:
                        return result
                return result
            result = False
            for value in node.values:
                result = self.visit(value)
                if result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.visit(node.left)
            for op, comparator in zip(node.ops, node.comparators):
                right = self.visit(comparator)
                if not _COMPARE[type(op)][1](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)
        if isinstance(node, ast.Call):
            return self.functions[node.func.id](*(self.visit(arg) for arg in node.args))
        raise ExprError(f"cannot evaluate {_where(node, self.text)}")  # _check admits nothing else


def evaluate_int(text: str, values: Mapping[str, int], what: str = "expression") -> int:
    """Parse and evaluate an integer expression (a launch size, a FLOP count); ExprError otherwise."""
    return parse(text, set(values)).evaluate_int(values, what)
