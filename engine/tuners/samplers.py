"""Optuna's samplers behind our tuner interface: TPE ("tpe") and CMA-ES ("cmaes").

Each knob is one integer parameter, the position of its option among the
options the view uses (a space restricted to a recording uses few of a split's
options; a full space uses all of them). A trial the sampler asks for is turned
into a config; one that is invalid or already measured is told back as failed
(it cost no measurement) and another is asked, up to `asks_per_config` times a
config, after which the base class fills the batch at random. Every
measurement the tuner learns from, its own or a random fill or a resumed log's,
reaches the study as a finished trial, so the sampler sees all of them.
The value the study maximises is log FLOP/s; a failed measurement is the worst
value seen so far minus log 10 (Optuna drops failed trials, which would let a
sampler walk back into a region that does not run).
"""
from __future__ import annotations

import math
import warnings
from .base import Tuner, score_of

_FAILURE_PENALTY = math.log(10.0)


def _optuna():
    """Optuna, imported when a sampler tuner is made: the registry (and a GPU worker whose
    image lacks Optuna) never pays for it otherwise."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # multivariate TPE and the constant liar are marked experimental; they are what batches need.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


class _OptunaTuner(Tuner):
    """A study over the knobs' option positions; subclasses give the sampler."""

    def __init__(self, task, seed=None, asks_per_config: int = 20, **sampler_options):
        super().__init__(task, seed)
        if asks_per_config < 1:
            raise ValueError(f"{self.name} tuner needs asks_per_config >= 1")
        self.asks_per_config = asks_per_config
        self._options = [self.space.used_options(position) for position in range(len(self.space.knobs))]
        self._names = list(self.space.knob_names)
        self.optuna = optuna = _optuna()
        self._distributions = {name: optuna.distributions.IntDistribution(0, len(options) - 1)
                               for name, options in zip(self._names, self._options)}
        sampler_seed = int(self.rng.integers(2**31))
        self.study = optuna.create_study(direction="maximize", sampler=self._sampler(sampler_seed, **sampler_options))
        self._asked: dict[int, "optuna.trial.Trial"] = {}  # config index -> its open trial
        self._worst: float | None = None

    def _sampler(self, seed: int, **options):
        raise NotImplementedError

    def _propose(self, n):
        proposed: dict[int, object] = {}
        for _ in range(n * self.asks_per_config):
            if len(proposed) == n:
                break
            trial = self.study.ask(self._distributions)
            digits = [options[trial.params[name]] for name, options in zip(self._names, self._options)]
            config = self.space.get(self.space.index_from_digits(digits))
            if config.index in self.visited or config.index in proposed or not self.space.is_valid(config):
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
                continue
            self._asked[config.index] = trial
            proposed[config.index] = config
        return list(proposed.values())

    def _learn(self, configs, results):
        for config, result in zip(configs, results):
            score = score_of(self.task, result)
            value = math.log(score) if score > 0 else None
            if value is not None:
                self._worst = value if self._worst is None else min(self._worst, value)
            else:
                value = (self._worst if self._worst is not None else 0.0) - _FAILURE_PENALTY
            trial = self._asked.pop(config.index, None)
            if trial is not None:
                self.study.tell(trial, value)
            else:  # a random fill or a resumed record: the study learns it as a finished trial
                params = {name: options.index(digit) for name, options, digit
                          in zip(self._names, self._options, config.digits) if digit in options}
                if len(params) == len(self._names):
                    self.study.add_trial(self.optuna.trial.create_trial(params=params, distributions=self._distributions,
                                                                      value=value))


class TPETuner(_OptunaTuner):
    """Optuna's tree-structured Parzen estimator, multivariate, with a constant liar for batches."""

    name = "tpe"

    def _sampler(self, seed, n_startup_trials: int = 10, multivariate: bool = True):
        return self.optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup_trials, multivariate=multivariate,
                                          constant_liar=True)


class CMAESTuner(_OptunaTuner):
    """Optuna's CMA-ES over the option positions (rounded to integers)."""

    name = "cmaes"

    def _sampler(self, seed, n_startup_trials: int = 1):
        return self.optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=n_startup_trials,
                                            warn_independent_sampling=False)
