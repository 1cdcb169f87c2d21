"""Config spaces: knobs, the index <-> entity rule, validity, sampling, neighbours.

A space is an ordered list of knobs. A config is one option of every knob, and its
index is the mixed-radix number whose first digit (fastest varying) is the first
knob's option index: AutoTVM's rule, so our indexes agree with TVM's logs.

A split knob cuts an axis of `extent` into `num_outputs` parts, outer first. Its
options come in AutoTVM's order: a depth-first walk that picks the innermost part
first (outermost loop), then the next one out, each from the ascending list of
allowed factors; the outermost part is whatever is left. For extent 8 into 3 parts:
(8,1,1) (4,2,1) (2,4,1) (1,8,1) (4,1,2) (2,2,2) (1,4,2) (2,1,4) (1,2,4) (1,1,8).
In a log a split is written `[-1, f_{k-1}, ..., f_1]` (outer part inferred).

Validity is a list of rules, each `rule(config) -> reason or None`, that a template
declares against a device's limits; configs that break one are known before any
compile. Sampling rejects invalid indexes rather than enumerating big spaces.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

Rule = Callable[["ConfigEntity"], "str | None"]
# (controller knob, {its value: {knob: the value that knob stands at}}): a space whose configs
# are invalid unless, for the controller's value, those knobs stand at those values (a
# template's rule, e.g. one mainloop's knobs at their first value in the other's configs).
# Random draws keep the pins, weighted to stay uniform over the configs that keep them, so
# rejection sampling stays uniform over the valid ones and wastes no draws on pinned-off ones.
# A value pinned to None is never drawn (a device that runs none of its configs: their indexes stay).
Pins = tuple[str, dict[Any, "dict[str, Any] | None"]]

SPLIT_POLICIES = ("factors", "power2", "candidate")
# Spaces up to this size are enumerated once for sampling (the valid list is cached).
ENUMERATE_LIMIT = 20_000
# Random draws allowed per requested config (plus a floor) before sampling gives up. The bound is the
# tensor-core GEMM at its smallest shapes (37x40x24): a pinned controller's options are drawn in
# proportion to their configs, so its many wgmma knobs leave mma_sync, where nearly all the valid
# configs of a tiny shape are, few draws: 0.06-0.08% of draws are valid there, 1 in 1,200-1,600.
DRAWS_PER_CONFIG = 2000
DRAWS_FLOOR = 10_000
# Validity answers a space remembers (one dict entry each, about 100 bytes).
VALIDITY_MEMO = 2_000_000
# A space with fewer configs than this computes indexes in numpy int64 (sampling, a restricted
# view's kept indexes, engine.columns' digits . strides); a larger one in Python ints. Every index,
# stride and partial sum of digit * stride is below the space's total, so int64's 2**63 - 1 would
# hold them; 2**62 keeps a factor of two to spare, so that no sum has to be argued to the last bit.
INT64_INDEXES = 2**62


class SpaceError(ValueError):
    """A knob or space defined with impossible settings."""


class EntityError(ValueError):
    """An entity (`[[name, kind, value], ...]`) that is not a config of this space."""


class SamplingError(ValueError):
    """Too few valid configs to sample the number asked for."""


def divisors(n: int) -> list[int]:
    """Every divisor of n, ascending (AutoTVM's get_factors)."""
    small, large = [], []
    for i in range(1, math.isqrt(n) + 1):
        if n % i == 0:
            small.append(i)
            if i != n // i:
                large.append(n // i)
    return small + large[::-1]


def powers_of_two(n: int) -> list[int]:
    """1, 2, 4, ... up to n (AutoTVM's get_pow2s)."""
    return [1 << e for e in range(n.bit_length())]


@dataclass(frozen=True)
class SplitValue:
    """One option of a split knob: the part sizes, outer first, outer resolved."""

    size: tuple[int, ...]

    def to_json(self) -> list[int]:
        return [-1, *self.size[1:]]

    def __repr__(self) -> str:
        return str(self.to_json())


@dataclass(frozen=True)
class OtherValue:
    """One option of a plain knob."""

    val: Any

    def __repr__(self) -> str:
        return repr(self.val)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class SplitKnob:
    """Split an axis of `extent` into `num_outputs` parts.

    Policies: `factors` (every part divides the extent, no tail), `power2` (inner
    parts are powers of two whose product is at most the extent; the outer part is
    the ceiling of what is left, so the kernel must guard a tail), `candidate` (the
    given size tuples, in the given order; an outer -1 is resolved). `max_factor`
    bounds the inner parts, as in AutoTVM.
    """

    kind = "sp"
    default_option = None  # a split is never missing from an entity

    def __init__(self, name: str, extent: int, num_outputs: int, policy: str = "factors",
                 max_factor: int | None = None, candidate: Sequence[Sequence[int]] | None = None):
        if not _is_int(extent) or extent < 1:
            raise SpaceError(f"split {name}: extent {extent!r} is not a positive integer")
        if not _is_int(num_outputs) or num_outputs < 1:
            raise SpaceError(f"split {name}: num_outputs {num_outputs!r} is not a positive integer")
        if policy not in SPLIT_POLICIES:
            raise SpaceError(f"split {name}: policy {policy!r} is not one of {', '.join(SPLIT_POLICIES)}")
        if (policy == "candidate") != (candidate is not None):
            raise SpaceError(f"split {name}: candidate sizes go with policy 'candidate' and only with it")
        self.name = name
        self.extent = int(extent)
        self.num_outputs = int(num_outputs)
        self.policy = policy
        self.max_factor = max_factor
        if policy == "candidate":
            inners = [self._candidate_inner(c) for c in candidate]
        else:
            allowed = divisors(self.extent) if policy == "factors" else powers_of_two(self.extent)
            if max_factor is not None:
                allowed = [f for f in allowed if f <= max_factor]
            inners = list(self._walk(self.extent, self.num_outputs - 1, allowed, policy == "factors"))
        if not inners:
            raise SpaceError(f"split {name}: no options (extent {self.extent}, max_factor {max_factor})")
        self.options: list[tuple[int, ...]] = [self._full(inner) for inner in inners]
        self._by_inner = {opt[1:]: i for i, opt in enumerate(self.options)}
        if len(self._by_inner) != len(self.options):
            raise SpaceError(f"split {name}: candidate sizes repeat")
        self._values = [SplitValue(opt) for opt in self.options]
        self.signature = ("sp", name, self.extent, self.num_outputs, policy, max_factor, tuple(self.options))

    @staticmethod
    def _walk(remaining: int, parts: int, allowed: list[int], exact: bool) -> Iterator[tuple[int, ...]]:
        """Inner parts outer-to-inner; the innermost is chosen in the outermost loop (AutoTVM's DFS)."""
        if parts == 0:
            yield ()
            return
        for factor in allowed:
            if factor > remaining:
                break
            if exact and remaining % factor:
                continue
            for outer_parts in SplitKnob._walk(remaining // factor, parts - 1, allowed, exact):
                yield outer_parts + (factor,)

    def _candidate_inner(self, sizes: Sequence[int]) -> tuple[int, ...]:
        sizes = list(sizes)
        if len(sizes) != self.num_outputs:
            raise SpaceError(f"split {self.name}: candidate {sizes} does not have {self.num_outputs} parts")
        if not all(_is_int(s) and s >= 1 for s in sizes[1:]) or not (_is_int(sizes[0]) and (sizes[0] == -1 or sizes[0] >= 1)):
            raise SpaceError(f"split {self.name}: candidate {sizes} has a non-positive part")
        inner = tuple(int(s) for s in sizes[1:])
        if sizes[0] != -1 and self._full(inner)[0] != sizes[0]:
            raise SpaceError(f"split {self.name}: candidate {sizes} does not cover extent {self.extent}")
        return inner

    def _full(self, inner: tuple[int, ...]) -> tuple[int, ...]:
        return (-(-self.extent // math.prod(inner)), *inner)

    def __len__(self) -> int:
        return len(self.options)

    def value(self, option: int) -> SplitValue:
        return self._values[option]

    def option_of(self, raw: Any) -> int:
        """Option index of a logged value: `[-1, ...inner]` or an explicit outer part (old logs)."""
        if not (isinstance(raw, (list, tuple)) and len(raw) == self.num_outputs and all(_is_int(v) for v in raw)):
            raise EntityError(f"{self.name}: {raw!r} is not a list of {self.num_outputs} integers")
        inner = tuple(int(v) for v in raw[1:])
        option = self._by_inner.get(inner)
        if option is None:
            raise EntityError(f"{self.name}: {list(raw)} is not an option of {self!r}")
        if raw[0] != -1 and raw[0] != self.options[option][0]:
            raise EntityError(f"{self.name}: outer part {raw[0]} of {list(raw)} does not match extent {self.extent}")
        return option

    def __repr__(self) -> str:
        return f"Split(policy={self.policy}, product={self.extent}, num_outputs={self.num_outputs}) len={len(self)}"


class OtherKnob:
    """A knob with a plain list of values (`define_knob` in AutoTVM).

    `default`: the value an entity without this knob stands for. A knob added to a
    template after logs were written takes it, so those logs still load; added last
    with the default as its first option, it keeps their indexes too.
    """

    kind = "ot"
    _NO_DEFAULT = object()

    def __init__(self, name: str, values: Sequence[Any], default: Any = _NO_DEFAULT):
        values = list(values)
        if not values:
            raise SpaceError(f"knob {name}: no values")
        self.name = name
        self.options = values
        self.default_option: int | None = None
        if default is not OtherKnob._NO_DEFAULT:
            try:
                self.default_option = self.option_of(default)
            except EntityError:
                raise SpaceError(f"knob {name}: default {default!r} is not one of {values}") from None
        self._values = [OtherValue(v) for v in values]
        self.signature = ("ot", name, tuple(values))

    def __len__(self) -> int:
        return len(self.options)

    def value(self, option: int) -> OtherValue:
        return self._values[option]

    def option_of(self, raw: Any) -> int:
        for i, v in enumerate(self.options):
            # 1 and True are equal in Python, but not the same knob value in a log.
            same_kind = (_is_int(v) and _is_int(raw)) or type(v) is type(raw)
            if same_kind and v == raw:
                return i
        raise EntityError(f"{self.name}: {raw!r} is not one of {self.options}")

    def __repr__(self) -> str:
        return f"OtherOption({self.options}) len={len(self)}"


Knob = SplitKnob | OtherKnob


class ConfigEntity:
    """One config: an index into a space. `config["tile_f"].size`, `config["unroll_explicit"].val`."""

    __slots__ = ("space", "index", "_digits")

    def __init__(self, space: "ConfigSpace", index: int, digits: tuple[int, ...] | None = None):
        self.space = space
        self.index = index
        self._digits = digits

    @property
    def digits(self) -> tuple[int, ...]:
        """The option index of every knob, in knob order."""
        if self._digits is None:
            self._digits = self.space._digits_of(self.index)
        return self._digits

    def __getitem__(self, name: str) -> SplitValue | OtherValue:
        position = self.space._position.get(name)
        if position is None:
            raise KeyError(f"no knob {name!r}; knobs are {', '.join(self.space.knob_names)}")
        return self.space.knobs[position].value(self.digits[position])

    def values(self) -> dict[str, Any]:
        """name -> size tuple for splits, plain value for other knobs."""
        out = {}
        for knob, digit in zip(self.space.knobs, self.digits):
            value = knob.value(digit)
            out[knob.name] = value.size if isinstance(value, SplitValue) else value.val
        return out

    def to_entity(self) -> list[list]:
        """The log's `config.entity`: [[name, "sp", [-1, ...]], [name, "ot", value], ...]."""
        out = []
        for knob, digit in zip(self.space.knobs, self.digits):
            value = knob.value(digit)
            out.append([knob.name, knob.kind, value.to_json() if isinstance(value, SplitValue) else value.val])
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigEntity) or self.index != other.index:
            return False
        mine, theirs = self.space, other.space
        return mine is theirs or (mine._key_hash == theirs._key_hash and mine.key == theirs.key)

    def __hash__(self) -> int:
        return hash((self.space._key_hash, self.index))

    def __repr__(self) -> str:
        pairs = ", ".join(f"({name!r}, {value!r})" for name, _, value in self.to_entity())
        return f"[{pairs}],None,{self.index}"


class ConfigSpace:
    """Knobs in definition order plus the rules that make a config valid.

    `len(space)` is the number of configs in this view: the full mixed-radix product,
    or the count of indexes a `restrict`ed view keeps. Index numbers never change.
    """

    def __init__(self, knobs: Iterable[Knob], rules: Iterable[Rule] | None = None, *,
                 legacy_swaps: Iterable[tuple[str, str]] = (), allowed: Iterable[int] | None = None,
                 pins: "Pins | None" = None):
        self.knobs: tuple[Knob, ...] = tuple(knobs)
        self.knob_names = [k.name for k in self.knobs]
        if len(set(self.knob_names)) != len(self.knob_names):
            raise SpaceError(f"knob names repeat: {self.knob_names}")
        self._position = {name: i for i, name in enumerate(self.knob_names)}
        self.rules: tuple[Rule, ...] = tuple(rules or ())
        # Pairs (a, b) of knobs that old logs list in the other order, b before a, with
        # each one's value belonging to the other name (AutoTVM's early tile_rx/tile_ry).
        self.legacy_swaps = tuple(legacy_swaps)
        self.radixes = tuple(len(k) for k in self.knobs)
        self.total = math.prod(self.radixes)
        self.key = tuple(k.signature for k in self.knobs)
        self._key_hash = hash(self.key)
        self._allowed: tuple[int, ...] | None = None
        self._allowed_set: frozenset[int] | None = None
        if allowed is not None:
            kept = sorted(set(int(i) for i in allowed))
            bad = [i for i in kept if not 0 <= i < self.total]
            if bad:
                raise SpaceError(f"indexes {bad[:5]} are outside the space (0..{self.total - 1})")
            self._allowed, self._allowed_set = tuple(kept), frozenset(kept)
        self._kept_array: np.ndarray | None = None
        self._valid_cache: list[int] | None = None
        self._used_options: list[list[int]] | None = None
        self._kept_digits: tuple[np.ndarray, np.ndarray] | None = None
        self._validity: dict[int, bool] = {}
        self.pins = pins
        self._pinned = self._pinned_proposal(pins) if pins else None

    def _pinned_proposal(self, pins: "Pins") -> tuple[int, np.ndarray, dict[int, list[tuple[int, int]]]]:
        """(controller's position, the probability of each of its options, per option the
        (position, option) its pinned knobs stand at), each option weighted by the configs
        that keep its pins, so that draws are uniform over every config that keeps them."""
        controller, by_value = pins
        if controller not in self._position:
            raise SpaceError(f"pins name {controller!r}, which is not a knob")
        position, knob = self._position[controller], self.knobs[self._position[controller]]
        fixed: dict[int, list[tuple[int, int]]] = {}
        weights = []
        for option in range(len(knob)):
            pinned = by_value.get(knob.value(option).val, {})
            if pinned is None:  # never drawn
                fixed[option] = []
                weights.append(0)
                continue
            unknown = set(pinned) - set(self._position) | ({controller} & set(pinned))
            if unknown:
                raise SpaceError(f"pins of {controller} = {knob.value(option).val!r} name {sorted(unknown)}")
            fixed[option] = [(self._position[name], self.knobs[self._position[name]].option_of(value))
                             for name, value in pinned.items()]
            free = math.prod(r for i, r in enumerate(self.radixes)
                             if i != position and i not in {p for p, _ in fixed[option]})
            weights.append(free)
        return position, np.array(weights, dtype=float) / sum(weights), fixed

    # -- views ------------------------------------------------------------------------
    def with_rules(self, rules: Iterable[Rule]) -> "ConfigSpace":
        return ConfigSpace(self.knobs, rules, legacy_swaps=self.legacy_swaps, allowed=self._allowed, pins=self.pins)

    def with_pins(self, pins: "Pins") -> "ConfigSpace":
        return ConfigSpace(self.knobs, self.rules, legacy_swaps=self.legacy_swaps, allowed=self._allowed, pins=pins)

    def restrict(self, indices: Iterable[int]) -> "ConfigSpace":
        """A view that holds only these indexes (numbers unchanged); used by replay."""
        indices = set(int(i) for i in indices)
        if self._allowed_set is not None:
            indices &= self._allowed_set
        return ConfigSpace(self.knobs, self.rules, legacy_swaps=self.legacy_swaps, allowed=indices, pins=self.pins)

    def __len__(self) -> int:
        return self.total if self._allowed is None else len(self._allowed)

    def __contains__(self, item: "int | ConfigEntity") -> bool:
        index = item.index if isinstance(item, ConfigEntity) else item
        if self._allowed_set is not None:
            return index in self._allowed_set
        return 0 <= index < self.total

    def kept_indexes(self) -> np.ndarray | None:
        """A restricted view's indexes as an ascending int64 array (None in a full space), for
        checking many configs at once (engine.columns)."""
        if self._allowed is None:
            return None
        if self._kept_array is None:
            self._kept_array = np.array(self._allowed, dtype=np.int64 if self.total < INT64_INDEXES else object)
        return self._kept_array

    def iter_indexes(self) -> Iterator[int]:
        """Every index of this view, ascending (valid or not)."""
        return iter(self._allowed) if self._allowed is not None else iter(range(self.total))

    # -- index <-> config ---------------------------------------------------------------
    def _digits_of(self, index: int) -> tuple[int, ...]:
        digits = []
        for radix in self.radixes:
            index, digit = divmod(index, radix)
            digits.append(digit)
        return tuple(digits)

    def index_from_digits(self, digits: Sequence[int]) -> int:
        index, stride = 0, 1
        for digit, radix in zip(digits, self.radixes):
            index += int(digit) * stride
            stride *= radix
        return index

    def get(self, index: int) -> ConfigEntity:
        if not _is_int(index) or not 0 <= index < self.total:
            raise IndexError(f"config index {index!r} is outside the space (0..{self.total - 1})")
        return ConfigEntity(self, int(index))

    def index_of(self, entity: Sequence) -> int:
        """Index of a logged entity `[[name, kind, value], ...]`; raises EntityError."""
        if not isinstance(entity, (list, tuple)):
            raise EntityError("entity is not a list of [name, kind, value]")
        by_name: dict[str, tuple[int, str, Any]] = {}
        for order, item in enumerate(entity):
            if not (isinstance(item, (list, tuple)) and len(item) == 3 and isinstance(item[0], str)):
                raise EntityError(f"entity item {item!r} is not [name, kind, value]")
            if item[0] in by_name:
                raise EntityError(f"knob {item[0]} appears twice")
            by_name[item[0]] = (order, item[1], item[2])
        for a, b in self.legacy_swaps:
            if a in by_name and b in by_name and by_name[b][0] < by_name[a][0]:
                by_name[a], by_name[b] = by_name[b], by_name[a]
        extra = sorted(set(by_name) - set(self.knob_names))
        if extra:
            raise EntityError(f"knob {', '.join(extra)} is not in this space ({', '.join(self.knob_names)})")
        digits = []
        for knob in self.knobs:
            if knob.name not in by_name:
                if knob.default_option is None:
                    raise EntityError(f"knob {knob.name} is missing")
                digits.append(knob.default_option)
                continue
            _, kind, raw = by_name[knob.name]
            if kind != knob.kind:
                raise EntityError(f"knob {knob.name} has kind {kind!r}, expected {knob.kind!r}")
            digits.append(knob.option_of(raw))
        return self.index_from_digits(digits)

    def from_entity(self, entity: Sequence) -> ConfigEntity:
        return self.get(self.index_of(entity))

    def along(self, config: ConfigEntity, knob: str, others: dict[str, Any] | None = None) -> list[ConfigEntity]:
        """`config` at each other option of `knob`, in option order, with `others` (other knobs' plain values)
        set in each: what those options ask of the rest. Valid or not: the template judges."""
        position = {k.name: i for i, k in enumerate(self.knobs)}
        if knob not in position or any(name not in position for name in others or {}):
            unknown = sorted({knob, *(others or {})} - set(position))
            raise EntityError(f"knob {', '.join(unknown)} is not in this space ({', '.join(self.knob_names)})")
        pinned = {position[name]: self.knobs[position[name]].option_of(value) for name, value in (others or {}).items()}
        variants = []
        for option in range(len(self.knobs[position[knob]])):
            if option == config.digits[position[knob]]:
                continue
            digits = list(config.digits)
            digits[position[knob]] = option
            for at, digit in pinned.items():
                digits[at] = digit
            variants.append(self.get(self.index_from_digits(digits)))
        return variants

    def knob_defaults(self) -> dict[str, Any]:
        """What an entity that lacks a knob stands for, for the knobs that have a default."""
        return {k.name: k.options[k.default_option] for k in self.knobs if k.default_option is not None}

    # -- validity -------------------------------------------------------------------------
    def why_invalid(self, config: ConfigEntity) -> str | None:
        """The first reason this config cannot run, or None when it is valid."""
        if config.space.key != self.key:
            raise EntityError("the config belongs to a different space")
        if self._allowed_set is not None and config.index not in self._allowed_set:
            return f"config {config.index} is not among the {len(self._allowed)} configs of this restricted space"
        for rule in self.rules:
            reason = rule(config)
            if reason:
                return reason
        return None

    def is_valid(self, config: ConfigEntity) -> bool:
        """Whether the config can run; remembered per index (up to VALIDITY_MEMO configs), since
        annealing chains and tuners ask about the same configs again and again."""
        known = self._validity.get(config.index)
        if known is None or (config.space is not self and config.space.key != self.key):
            known = self.why_invalid(config) is None
            if len(self._validity) < VALIDITY_MEMO:
                self._validity[config.index] = known
        return known

    def _valid_indexes(self) -> list[int]:
        if self._valid_cache is None:
            self._valid_cache = [i for i in self.iter_indexes() if self.why_invalid(ConfigEntity(self, i)) is None]
        return self._valid_cache

    def used_options(self, position: int) -> list[int]:
        """The option indexes of knob `position` that configs of this view take, ascending:
        every option in a full space, those of the kept configs in a restricted view."""
        if self._allowed is None:
            return list(range(self.radixes[position]))
        if self._used_options is None:
            digits = [self._digits_of(i) for i in self._allowed]
            self._used_options = [sorted({d[p] for d in digits}) for p in range(len(self.knobs))]
        return self._used_options[position]

    # -- sampling and walks -----------------------------------------------------------------
    def sample(self, rng: np.random.Generator, n: int, exclude: Iterable["int | ConfigEntity"] = ()) -> list[ConfigEntity]:
        """Up to n distinct valid configs, uniform over the valid ones not in `exclude`.

        Small views (at most ENUMERATE_LIMIT configs) are enumerated, so fewer than n come
        back only when fewer exist. Larger ones are rejection-sampled; SamplingError when
        the random draws run out before n valid configs are found.
        """
        excluded = {c.index if isinstance(c, ConfigEntity) else int(c) for c in exclude}
        if n <= 0:
            return []
        if len(self) <= ENUMERATE_LIMIT:
            pool = [i for i in self._valid_indexes() if i not in excluded]
            picks = rng.choice(len(pool), size=min(n, len(pool)), replace=False) if pool else []
            return [ConfigEntity(self, pool[int(p)]) for p in picks]
        chosen: dict[int, ConfigEntity] = {}
        budget = DRAWS_PER_CONFIG * n + DRAWS_FLOOR
        draws = valid_seen = 0
        while len(chosen) < n:
            if draws >= budget:
                raise SamplingError(
                    f"found {len(chosen)} of {n} valid configs in {draws} random draws from a space of "
                    f"{len(self)} (about {valid_seen / draws:.2%} of draws valid); the valid part is too small to sample"
                )
            batch = self._random_indexes(rng, min(budget - draws, max(64, 2 * (n - len(chosen)))))
            for index in batch:
                draws += 1
                if index in chosen or index in excluded:
                    continue
                config = ConfigEntity(self, index)
                if self.is_valid(config):
                    valid_seen += 1
                    chosen[index] = config
                    if len(chosen) == n:
                        break
        return list(chosen.values())

    def _random_indexes(self, rng: np.random.Generator, count: int) -> list[int]:
        """Indexes over the view: every digit drawn uniformly, except a pinned controller's knobs (drawn by
        its weights, the knobs it pins at their values), or a restricted view's own list."""
        if self._allowed is not None:
            return [self._allowed[int(i)] for i in rng.integers(0, len(self._allowed), size=count)]
        columns = [rng.integers(0, radix, size=count) for radix in self.radixes]
        if self._pinned is not None:  # the controller by its weights, its pinned knobs at their values
            position, weights, fixed = self._pinned
            columns[position] = rng.choice(len(weights), size=count, p=weights)
            for option, pinned in fixed.items():
                chosen = columns[position] == option
                for knob, value in pinned:
                    columns[knob][chosen] = value
        if self.total < INT64_INDEXES:
            index = np.zeros(count, dtype=np.int64)
            stride = 1
            for column, radix in zip(columns, self.radixes):
                index += column * stride
                stride *= radix
            return index.tolist()
        return [self.index_from_digits(digits) for digits in zip(*columns)]

    def neighbour(self, config: ConfigEntity, rng: np.random.Generator) -> ConfigEntity:
        """A valid config that differs from `config` in exactly one knob (AutoTVM's random walk).

        In a restricted view with no allowed one-knob neighbour, the allowed config with the
        fewest knobs changed. SamplingError when there is none at all.
        """
        movable = [i for i, radix in enumerate(self.radixes) if radix > 1]
        digits = config.digits
        for _ in range(32):
            if not movable:
                break
            position = movable[int(rng.integers(len(movable)))]
            option = int(rng.integers(self.radixes[position] - 1))
            candidate = self._with_digit(digits, position, option + (option >= digits[position]))
            if self.is_valid(candidate):
                return candidate
        moves = [(p, o) for p in movable for o in range(self.radixes[p]) if o != digits[p]]
        for pick in rng.permutation(len(moves)):
            candidate = self._with_digit(digits, *moves[int(pick)])
            if self.is_valid(candidate):
                return candidate
        if self._allowed is not None:
            nearest = self.nearest_kept(digits, rng, exclude=(config.index,))
            if nearest is not None:
                return nearest
        raise SamplingError(f"config {config.index} has no valid neighbour")

    def nearest_kept(self, digits: Sequence[int], rng: np.random.Generator,
                     exclude: Iterable[int] = ()) -> "ConfigEntity | None":
        """In a restricted view, a valid kept config with the fewest knobs different from
        `digits` (ties broken at random), not in `exclude`; None in a full space or when none is left."""
        if self._allowed is None:
            return None
        if self._kept_digits is None:
            valid = self._valid_indexes()
            self._kept_digits = (np.array(valid, dtype=np.int64),
                                 np.array([self._digits_of(i) for i in valid], dtype=np.int64).reshape(len(valid), -1))
        indexes, table = self._kept_digits
        if not len(indexes):
            return None
        distance = (table != np.asarray(digits, dtype=np.int64)).sum(axis=1)
        excluded = np.isin(indexes, np.fromiter(exclude, dtype=np.int64))
        distance[excluded] = np.iinfo(np.int64).max
        best = distance.min()
        if best == np.iinfo(np.int64).max:
            return None
        ties = np.flatnonzero(distance == best)
        return ConfigEntity(self, int(indexes[ties[int(rng.integers(len(ties)))]]))

    def _with_digit(self, digits: tuple[int, ...], position: int, option: int) -> ConfigEntity:
        new = digits[:position] + (option,) + digits[position + 1:]
        return ConfigEntity(self, self.index_from_digits(new), new)

    def __repr__(self) -> str:
        lines = [f"ConfigSpace (len={self.total}, space_map="]
        lines += [f"  {i:2d} {knob.name}: {knob!r}" for i, knob in enumerate(self.knobs)]
        if self._allowed is not None:
            lines.append(f"  restricted to {len(self._allowed)} configs")
        return "\n".join(lines) + "\n)"

    __str__ = __repr__
