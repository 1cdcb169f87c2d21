from collections import Counter

import numpy as np
import pytest

from engine.space import (
    ConfigEntity,
    ConfigSpace,
    EntityError,
    OtherKnob,
    SamplingError,
    SpaceError,
    SplitKnob,
    divisors,
)


def small_space(rules=None):
    return ConfigSpace([SplitKnob("a", 8, 3), OtherKnob("u", [0, 1]), SplitKnob("b", 6, 2)], rules)


def seed_space():
    """The seed tutorial's conv2d_no_batching space for ResNet-18's C12 layer."""
    return ConfigSpace([
        SplitKnob("tile_f", 512, 4), SplitKnob("tile_y", 7, 4), SplitKnob("tile_x", 7, 4),
        SplitKnob("tile_rc", 512, 3), SplitKnob("tile_ry", 3, 3), SplitKnob("tile_rx", 3, 3),
        OtherKnob("auto_unroll_max_step", [0, 512, 1500]), OtherKnob("unroll_explicit", [0, 1]),
    ])


def test_divisors_are_ascending():
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert divisors(1) == [1]
    assert divisors(49) == [1, 7, 49]


def test_a_split_of_8_into_3_parts_enumerates_innermost_first():
    # Written out by hand: the innermost part is chosen in the outer loop, ascending;
    # then the middle part, ascending; the outer part is what is left.
    assert SplitKnob("a", 8, 3).options == [
        (8, 1, 1), (4, 2, 1), (2, 4, 1), (1, 8, 1),
        (4, 1, 2), (2, 2, 2), (1, 4, 2),
        (2, 1, 4), (1, 2, 4),
        (1, 1, 8),
    ]


def test_a_split_of_a_prime_into_4_parts_has_4_options():
    assert SplitKnob("y", 7, 4).options == [(7, 1, 1, 1), (1, 7, 1, 1), (1, 1, 7, 1), (1, 1, 1, 7)]


def test_a_two_way_split_lists_the_inner_factor_ascending():
    assert SplitKnob("rc", 6, 2).options == [(6, 1), (3, 2), (2, 3), (1, 6)]


def test_max_factor_bounds_the_inner_parts_only():
    assert SplitKnob("a", 8, 2, max_factor=2).options == [(8, 1), (4, 2)]


def test_power2_allows_a_tail_and_rounds_the_outer_part_up():
    assert SplitKnob("p", 10, 2, policy="power2").options == [(10, 1), (5, 2), (3, 4), (2, 8)]


def test_candidate_keeps_the_given_order_and_resolves_minus_one():
    knob = SplitKnob("c", 16, 3, policy="candidate", candidate=[[-1, 4, 2], [2, 2, 4]])
    assert knob.options == [(2, 4, 2), (2, 2, 4)]
    with pytest.raises(SpaceError, match="does not cover extent"):
        SplitKnob("c", 16, 2, policy="candidate", candidate=[[3, 4]])


def test_a_bad_policy_is_refused_with_the_valid_ones_named():
    with pytest.raises(SpaceError, match="factors, power2, candidate"):
        SplitKnob("a", 8, 2, policy="verbose")


def test_the_first_knob_varies_fastest():
    space = small_space()
    assert len(space) == 10 * 2 * 4
    config = space.get(1)
    assert config.values() == {"a": (4, 2, 1), "u": 0, "b": (6, 1)}
    config = space.get(10)
    assert config.values() == {"a": (8, 1, 1), "u": 1, "b": (6, 1)}
    config = space.get(20 + 3)
    assert config.values() == {"a": (1, 8, 1), "u": 0, "b": (3, 2)}


def test_an_entity_is_written_with_minus_one_outer_and_read_back():
    space = small_space()
    config = space.get(23)
    assert config.to_entity() == [["a", "sp", [-1, 8, 1]], ["u", "ot", 0], ["b", "sp", [-1, 2]]]
    assert space.index_of(config.to_entity()) == 23


def test_an_old_entity_with_an_explicit_outer_part_is_read():
    space = small_space()
    assert space.index_of([["a", "sp", [1, 8, 1]], ["u", "ot", 0], ["b", "sp", [3, 2]]]) == 23


def test_an_entity_with_a_wrong_outer_part_is_refused():
    with pytest.raises(EntityError, match="outer part 2 of \\[2, 8, 1\\] does not match extent 8"):
        small_space().index_of([["a", "sp", [2, 8, 1]], ["u", "ot", 0], ["b", "sp", [3, 2]]])


@pytest.mark.parametrize("entity, message", [
    ([["a", "sp", [-1, 3, 1]], ["u", "ot", 0], ["b", "sp", [-1, 2]]], "is not an option"),
    ([["a", "sp", [-1, 8, 1]], ["b", "sp", [-1, 2]]], "knob u is missing"),
    ([["a", "sp", [-1, 8, 1]], ["u", "ot", 0], ["b", "sp", [-1, 2]], ["z", "ot", 1]], "knob z is not in this space"),
    ([["a", "ot", [-1, 8, 1]], ["u", "ot", 0], ["b", "sp", [-1, 2]]], "has kind 'ot'"),
    ([["a", "sp", [-1, 8, 1]], ["u", "ot", 2], ["b", "sp", [-1, 2]]], "2 is not one of \\[0, 1\\]"),
])
def test_an_entity_that_is_not_in_the_space_says_why(entity, message):
    with pytest.raises(EntityError, match=message):
        small_space().index_of(entity)


def test_a_knob_with_a_default_may_be_missing_and_reads_as_its_default():
    space = ConfigSpace([*small_space().knobs, OtherKnob("late", [1, 2, 4], default=1)])
    entity = [["a", "sp", [-1, 8, 1]], ["u", "ot", 1], ["b", "sp", [-1, 2]]]
    assert space.index_of(entity) == small_space().index_of(entity)
    assert space.get(space.index_of(entity + [["late", "ot", 4]]))["late"].val == 4
    with pytest.raises(SpaceError, match="default 3 is not one of \\[1, 2, 4\\]"):
        OtherKnob("late", [1, 2, 4], default=3)


def test_a_legacy_swap_reads_old_logs_by_position():
    space = ConfigSpace([SplitKnob("ry", 3, 2), SplitKnob("rx", 1, 2)], legacy_swaps=[("ry", "rx")])
    modern = [["ry", "sp", [-1, 3]], ["rx", "sp", [-1, 1]]]
    old = [["rx", "sp", [-1, 3]], ["ry", "sp", [-1, 1]]]  # rx listed first, holding the height split
    assert space.index_of(modern) == space.index_of(old) == 1


def test_the_seed_space_has_the_tutorials_length_and_print_form():
    space = seed_space()
    assert len(space) == 10454400
    assert str(space) == (
        "ConfigSpace (len=10454400, space_map=\n"
        "   0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220\n"
        "   1 tile_y: Split(policy=factors, product=7, num_outputs=4) len=4\n"
        "   2 tile_x: Split(policy=factors, product=7, num_outputs=4) len=4\n"
        "   3 tile_rc: Split(policy=factors, product=512, num_outputs=3) len=55\n"
        "   4 tile_ry: Split(policy=factors, product=3, num_outputs=3) len=3\n"
        "   5 tile_rx: Split(policy=factors, product=3, num_outputs=3) len=3\n"
        "   6 auto_unroll_max_step: OtherOption([0, 512, 1500]) len=3\n"
        "   7 unroll_explicit: OtherOption([0, 1]) len=2\n"
        ")"
    )


def test_index_entity_index_round_trips_over_random_indexes_of_a_big_space():
    space = seed_space()
    rng = np.random.default_rng(7)
    for index in rng.integers(0, len(space), size=500).tolist():
        config = space.get(index)
        assert space.index_of(config.to_entity()) == index
        assert all(np.prod(size) == extent for size, extent in zip(
            [config[n].size for n in ("tile_f", "tile_rc")], (512, 512)))


def test_get_refuses_an_index_outside_the_space():
    with pytest.raises(IndexError, match="outside the space \\(0..79\\)"):
        small_space().get(80)


def test_configs_compare_by_space_and_index():
    assert small_space().get(5) == small_space().get(5)
    assert len({small_space().get(5), small_space().get(5), small_space().get(6)}) == 2
    other = ConfigSpace([SplitKnob("a", 16, 3), OtherKnob("u", [0, 1]), SplitKnob("b", 6, 2)])
    assert other.get(5) != small_space().get(5)


def test_a_config_prints_like_autotvms():
    assert repr(small_space().get(23)) == "[('a', [-1, 8, 1]), ('u', 0), ('b', [-1, 2])],None,23"


def only_small_inner_a(config):
    return "inner part of a is over 2" if config["a"].size[2] > 2 else None


def test_rules_make_configs_invalid_with_their_reason():
    space = small_space([only_small_inner_a])
    assert space.why_invalid(space.get(0)) is None
    assert space.why_invalid(space.get(7)) == "inner part of a is over 2"
    assert not space.is_valid(space.get(7))


def test_sampling_returns_distinct_valid_configs_reproducibly():
    space = small_space([only_small_inner_a])
    picks = space.sample(np.random.default_rng(3), 20)
    assert len({c.index for c in picks}) == 20
    assert all(space.is_valid(c) for c in picks)
    assert [c.index for c in picks] == [c.index for c in space.sample(np.random.default_rng(3), 20)]


def test_sampling_a_small_space_returns_every_valid_config_when_asked_for_more():
    space = small_space([only_small_inner_a])
    assert len(space.sample(np.random.default_rng(0), 1000)) == 7 * 2 * 4


def test_sampling_excludes_what_it_is_told_to():
    space = small_space([only_small_inner_a])
    taken = space.sample(np.random.default_rng(0), 50)
    rest = space.sample(np.random.default_rng(1), 50, exclude=taken)
    assert len(rest) == 6 and not set(rest) & set(taken)


def test_sampling_a_big_space_is_fast_valid_and_reproducible():
    def few_threads(config):
        return None if config["tile_f"].size[2] * config["tile_y"].size[2] <= 64 else "too many threads"

    space = seed_space().with_rules([few_threads])
    picks = space.sample(np.random.default_rng(11), 2000)
    assert len(set(picks)) == 2000
    assert all(space.is_valid(c) for c in picks)
    assert picks[:50] == space.sample(np.random.default_rng(11), 2000)[:50]


def test_sampling_is_uniform_over_the_valid_configs():
    space = small_space([only_small_inner_a])
    counts = np.zeros(len(space))
    rng = np.random.default_rng(5)
    for _ in range(2000):
        counts[space.sample(rng, 1)[0].index] += 1
    valid = [i for i in range(len(space)) if space.is_valid(space.get(i))]
    assert counts.sum() == counts[valid].sum()
    expected = 2000 / len(valid)
    assert counts[valid].min() > expected * 0.4 and counts[valid].max() < expected * 1.8


def test_sampling_a_big_space_with_almost_no_valid_config_fails_clearly():
    space = seed_space().with_rules([lambda c: None if c.index == 12345 else "not the one"])
    with pytest.raises(SamplingError, match="valid part is too small to sample"):
        space.sample(np.random.default_rng(0), 5)


def test_a_neighbour_differs_in_exactly_one_knob_and_is_valid():
    space = seed_space().with_rules([lambda c: None if c["tile_f"].size[2] <= 32 else "too many"])
    rng = np.random.default_rng(2)
    config = space.sample(rng, 1)[0]
    for _ in range(200):
        other = space.neighbour(config, rng)
        assert sum(a != b for a, b in zip(config.digits, other.digits)) == 1
        assert space.is_valid(other)
        config = other


def test_a_config_along_a_knob_takes_its_other_options_and_the_values_they_ask_for():
    space = ConfigSpace([OtherKnob("step", [0, 1, 2]), OtherKnob("block", [8, 16, 32]), OtherKnob("u", [0, 1])])
    config = space.from_entity([["step", "ot", 0], ["block", "ot", 32], ["u", "ot", 1]])
    variants = space.along(config, "step", {"block": 8})
    assert [c.values() for c in variants] == [{"step": 1, "block": 8, "u": 1}, {"step": 2, "block": 8, "u": 1}]
    assert [c.values()["step"] for c in space.along(variants[0], "step")] == [0, 2]
    with pytest.raises(EntityError, match="knob nope is not in this space"):
        space.along(config, "step", {"nope": 1})
    with pytest.raises(EntityError, match="block: 12 is not one of"):
        space.along(config, "step", {"block": 12})


def test_a_config_with_no_valid_neighbour_says_so():
    space = small_space([lambda c: None if c.index == 0 else "only zero"])
    with pytest.raises(SamplingError, match="no valid neighbour"):
        space.neighbour(space.get(0), np.random.default_rng(0))


def test_a_restricted_space_keeps_index_numbers_and_samples_only_from_its_set():
    space = seed_space().restrict([5, 99, 123456, 10454399])
    assert len(space) == 4
    assert list(space.iter_indexes()) == [5, 99, 123456, 10454399]
    assert 99 in space and 100 not in space
    assert space.get(99) == seed_space().get(99)
    assert "not among the 4 configs" in space.why_invalid(space.get(100))
    picks = space.sample(np.random.default_rng(0), 10)
    assert sorted(c.index for c in picks) == [5, 99, 123456, 10454399]
    assert "restricted to 4 configs" in str(space)


def test_a_big_restricted_space_samples_from_its_own_list():
    allowed = list(range(0, 10454400, 300))  # 34848 indexes: too many to enumerate, too sparse to hit by chance
    space = seed_space().restrict(allowed)
    picks = space.sample(np.random.default_rng(0), 500)
    assert len(set(picks)) == 500 and all(c.index % 300 == 0 for c in picks)


def test_a_restricted_space_walks_to_the_nearest_allowed_config():
    space = small_space().restrict([0, 1, 79])
    neighbour = space.neighbour(space.get(0), np.random.default_rng(0))
    assert neighbour.index == 1


def test_a_config_of_another_space_is_refused_by_the_rules():
    with pytest.raises(EntityError, match="different space"):
        small_space().why_invalid(seed_space().get(0))


def test_a_config_knob_lookup_names_the_knobs_when_missing():
    with pytest.raises(KeyError, match="knobs are a, u, b"):
        small_space().get(0)["tile_f"]


def test_configentity_is_the_one_config_type():
    assert isinstance(small_space().get(0), ConfigEntity)


def test_pinned_draws_keep_the_pins_and_stay_uniform_over_the_configs_that_keep_them():
    """a = x pins b at its first value: of the 4 + 12 configs that keep the pins, x holds 4."""
    space = ConfigSpace([OtherKnob("a", ["x", "y"]), OtherKnob("b", [0, 1, 2]), OtherKnob("c", [0, 1, 2, 3])],
                        pins=("a", {"x": {"b": 0}}))
    draws = [space.get(i).values() for i in space._random_indexes(np.random.default_rng(0), 16000)]
    assert all(d["b"] == 0 for d in draws if d["a"] == "x")
    counts = Counter(tuple(d.values()) for d in draws)
    assert len(counts) == 16 and all(900 < n < 1100 for n in counts.values())  # 1000 each
    with pytest.raises(SpaceError, match="name"):
        ConfigSpace(space.knobs, pins=("a", {"x": {"d": 0}}))


def test_a_value_pinned_to_none_is_never_drawn_and_keeps_its_indexes():
    space = ConfigSpace([OtherKnob("a", ["x", "y"]), OtherKnob("b", [0, 1, 2])], pins=("a", {"x": {"b": 0}}))
    off = space.with_pins(("a", {"x": None}))
    draws = {off.get(i).values()["a"] for i in off._random_indexes(np.random.default_rng(0), 500)}
    assert draws == {"y"} and len(off) == len(space) and off.get(1).values() == space.get(1).values()
