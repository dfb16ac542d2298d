"""Scalar expressions with constant folding, for the code generator.

A value is an ``Expr``: a sum of monomials ``coef * f1 * f2 * ...`` where ``coef`` is a float
literal and the factors are names of scalar variables of the generated function. Products by the
constants 0 and 1 fold away, constant terms are summed, so a robot's structural zeros (a joint axis
along z, an identity placement, a body at rest) never reach the generated source. An Expr with more
than one term is written to a new variable by ``Emitter.value`` before it enters a product, so
expressions never grow beyond one sum of products.
"""
from __future__ import annotations

import math

ZERO = ()


def const(c):
    """The constant c as an Expr (the empty sum for 0)."""
    c = float(c)
    return ((c, ()),) if c != 0.0 else ZERO


def var(name):
    return ((1.0, (name,)),)


def is_const(e):
    return all(not factors for _, factors in e)


def const_value(e):
    return sum(c for c, _ in e)


def add(*exprs):
    """Sum of Exprs; constant terms merged into one (placed last)."""
    terms = []
    constant = 0.0
    for e in exprs:
        for c, factors in e:
            if factors:
                terms.append((c, factors))
            else:
                constant += c
    if constant != 0.0:
        terms.append((constant, ()))
    return tuple(terms)


def scale(e, c):
    c = float(c)
    if c == 0.0:
        return ZERO
    if c == 1.0:
        return e
    return tuple((k * c, f) for k, f in e)


def neg(e):
    return scale(e, -1.0)


def sub(a, b):
    return add(a, neg(b))


def fmt_float(c):
    text = repr(float(c))
    if not math.isfinite(c):
        raise ValueError(f"non-finite constant {c} in a generated kernel")
    return text


def _term_text(c, factors):
    """Text of |term| and its sign."""
    sign = -1 if c < 0 else 1
    c = abs(c)
    if not factors:
        return sign, fmt_float(c)
    body = "*".join(factors)
    if c != 1.0:
        body = f"{body}*{fmt_float(c)}"
    return sign, body


def text(e):
    """Python source of an Expr."""
    if not e:
        return "0.0"
    parts = []
    for k, (c, factors) in enumerate(e):
        sign, body = _term_text(c, factors)
        if k == 0:
            parts.append(body if sign > 0 else f"-{body}")
        else:
            parts.append(f" + {body}" if sign > 0 else f" - {body}")
    return "".join(parts)


class Emitter:
    """Collects the statements of one generated function and names its intermediate values."""

    def __init__(self):
        self.lines = []
        self._count = 0

    def emit(self, line):
        self.lines.append(line)

    def fresh(self, prefix="t"):
        self._count += 1
        return f"{prefix}{self._count}"

    def value(self, e, prefix="t"):
        """e as an Expr of at most one term: a constant, a (scaled) product, or a new variable."""
        if len(e) <= 1:
            return e
        name = self.fresh(prefix)
        self.emit(f"{name} = {text(e)}")
        return var(name)

    def named(self, e, prefix="t"):
        """e as a constant or a single plain variable (no coefficient): for values used often."""
        if not e or is_const(e) or (len(e) == 1 and e[0][0] == 1.0 and len(e[0][1]) == 1):
            return e
        name = self.fresh(prefix)
        self.emit(f"{name} = {text(e)}")
        return var(name)

    def mul(self, a, b):
        """Product of two Exprs; a sum is first written to a variable (see module docstring)."""
        if not a or not b:
            return ZERO
        if is_const(a):
            return scale(b, const_value(a))
        if is_const(b):
            return scale(a, const_value(b))
        a = self.value(a)
        b = self.value(b)
        (ca, fa), = a
        (cb, fb), = b
        return ((ca * cb, fa + fb),)

    def dot(self, pairs):
        """sum of a_k b_k over pairs of Exprs."""
        return add(*(self.mul(a, b) for a, b in pairs))

    def call(self, function, e, prefix="t"):
        """A new variable = function(e) for function in _FOLD (math.cos, abs, 1.0 / ...);
        folded when e is constant."""
        if is_const(e):
            return const(_FOLD[function](const_value(e)))
        name = self.fresh(prefix)
        self.emit(f"{name} = {function}({text(e)})")
        return var(name)


_FOLD = {"math.cos": math.cos, "math.sin": math.sin, "math.sqrt": math.sqrt, "abs": abs,
         "1.0 /": lambda x: 1.0 / x}
