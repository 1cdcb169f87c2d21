"""The submit form and the add-a-custom-kernel form: fields for the browser; the rules
themselves are jobs.submission's and jobs.custom_kernels'."""
from __future__ import annotations

import json
import uuid

from django import forms
from django.conf import settings

from engine import CUSTOM_TEMPLATE as CUSTOM, NETWORKS, PRESETS, TEMPLATES, TUNERS

from .custom_kernels import MAX_SOURCE_CHARS, MAX_SPEC_CHARS, SPEC_HELP, CustomKernelError, check_new_kernel, spec_from_fields
from .models import IDEMPOTENCY_KEY_CHARS, CustomKernel, Job
from .network import NetworkRequest, check_network_request
from .submission import JobRequest, check_idempotency_key, check_remeasure_request, check_request, online_devices

ARGS_HELP = 'Or type the args as in a log\'s input, e.g. [["TENSOR", [1, 512, 7, 7], "float32"], ...]'


class AnyChoices(forms.MultipleChoiceField):
    """Choices shown are the GPUs online now; what was posted is judged by check_request,
    which says which GPU model is missing instead of "not one of the available choices"."""

    def valid_value(self, value) -> bool:
        return True


def preset_choices() -> list:
    groups: dict[str, list] = {}
    for preset in PRESETS.values():
        groups.setdefault(f"{preset.group} ({preset.task_name})", []).append(
            (preset.name, f"{preset.name}: {preset.description}")
        )
    return [("", "— typed args —"), *groups.items()]


def gpu_choices() -> list:
    choices = []
    for model, workers in sorted(online_devices().items()):
        idle = sum(1 for w in workers if w.status == "idle")
        label = str(workers[0].device) + f" — {len(workers)} online, {idle} idle"
        choices.append((model, label))
    return choices


def preset_availability() -> dict:
    """For the submit page's script: each preset's template, and per online GPU model the
    presets it can serve (null: all of them; a replay worker only those it recorded)."""
    online = online_devices()
    served = {}
    for model, workers in online.items():
        if any(not w.is_replay for w in workers):
            served[model] = None
        else:
            served[model] = [p.name for p in PRESETS.values() if any(w.serves(p.task_name, p.args) for w in workers)]
    return {"templates": {p.name: p.task_name for p in PRESETS.values()}, "served": served}


class JobRequestForm(forms.Form):
    """A form whose fields become a request (a JobRequest by jobs.submission's rules, a
    NetworkRequest by jobs.network's: `check`), offering the GPUs online now; `request`
    holds it once the form is valid."""

    # Made when the form is shown and posted back with it: submitting twice (a retry
    # after "the task queue is unreachable", a double click) returns the first job.
    idempotency_key = forms.CharField(widget=forms.HiddenInput, required=False, max_length=IDEMPOTENCY_KEY_CHARS)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["gpus"].choices = gpu_choices()
        self.fields["idempotency_key"].initial = uuid.uuid4().hex
        self.request: JobRequest | NetworkRequest | None = None

    def check(self, data: dict) -> JobRequest | NetworkRequest:
        raise NotImplementedError

    def clean(self):
        data = super().clean()
        if not self.errors:
            self.request = self.check(data)
            data["idempotency_key"] = check_idempotency_key(data.get("idempotency_key", ""))
        return data


class JobForm(JobRequestForm):
    template = forms.ChoiceField(help_text="the kernel template (task name in logs)")
    preset = forms.ChoiceField(required=False, label="Workload preset")
    custom_kernel = forms.ModelChoiceField(
        queryset=CustomKernel.objects.all(), required=False, empty_label="—",
        help_text="for the custom template: one of the kernels staff added",
    )
    args = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 70}), help_text=ARGS_HELP)
    tuner = forms.ChoiceField()
    n_trial = forms.IntegerField(label="Trial budget", initial=200, help_text="configs measured per GPU")
    early_stopping = forms.IntegerField(
        required=False, help_text="stop after this many trials without a faster config (empty: never)"
    )
    top_k = forms.IntegerField(
        required=False, label="Confirm top k", help_text="distinct configs re-measured when the run ends, "
        "interleaved with the vendor baseline and the default config (0: none; empty: the site's default)",
    )
    gpus = AnyChoices(label="GPUs", widget=forms.CheckboxSelectMultiple)
    private = forms.BooleanField(
        required=False, label="Private", help_text="only you and staff see this job's records, on every page and download",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["top_k"].initial = settings.TUNERWEB_CONFIRM_TOP_K
        self.fields["template"].choices = [(name, name) for name in sorted(TEMPLATES)]
        self.fields["template"].initial = "conv2d_nchw.cuda" if "conv2d_nchw.cuda" in TEMPLATES else None
        self.fields["preset"].choices = preset_choices()
        self.fields["tuner"].choices = [(name, name) for name in sorted(TUNERS)]
        self.fields["tuner"].initial = "xgb" if "xgb" in TUNERS else None

    def clean(self):
        """Every field's problem at once: the request is checked even when a field already
        failed, and its errors go to the fields that have none yet."""
        data = forms.Form.clean(self)
        try:
            self.request = self.check(data)
        except forms.ValidationError as exc:
            for field, messages in exc.message_dict.items():
                if field not in self.errors:
                    self.add_error(field, messages)
        return data

    def check(self, data: dict) -> JobRequest:
        args = data.get("args", "")
        kernel = data.get("custom_kernel")
        if kernel is not None:
            if data.get("template") != CUSTOM:
                raise forms.ValidationError({"custom_kernel": f"a custom kernel is tuned with the {CUSTOM} template"})
            args = kernel.workload.args
        return check_request(
            template=data.get("template", ""), preset=data.get("preset", ""), args=args,
            tuner=data.get("tuner", ""), n_trial=data.get("n_trial"), gpus=data.get("gpus"),
            early_stopping=data.get("early_stopping"), top_k=data.get("top_k"), private=data.get("private", False),
        )


class RemeasureForm(JobRequestForm):
    """A re-measure job: a workload's configs from an import batch or a GPU's leaderboard,
    measured again by the confirmation protocol on the GPUs chosen."""

    workload = forms.IntegerField(help_text="the workload's id (its leaderboard's number)")
    from_batch = forms.IntegerField(required=False, label="From import batch",
                                    help_text="its best config of this workload on each GPU model")
    from_device = forms.CharField(required=False, label="Or from the leaderboard of GPU model",
                                  help_text="its top-k configs of this workload")
    top_k = forms.IntegerField(required=False, initial=5, label="Top k")
    rounds = forms.IntegerField(required=False, initial=5, help_text="interleaved rounds, at least 5")
    gpus = AnyChoices(label="Measure on", widget=forms.CheckboxSelectMultiple)

    def check(self, data: dict) -> JobRequest:
        return check_remeasure_request(
            workload=data["workload"], gpus=data["gpus"], from_batch=data.get("from_batch"),
            from_device=data.get("from_device") or None, top_k=data.get("top_k"), rounds=data.get("rounds"),
        )


class CustomKernelForm(forms.Form):
    """Adding a custom kernel (staff): the rules are jobs.custom_kernels'."""

    name = forms.CharField(max_length=100, help_text="how pages and the submit form name it")
    source = forms.CharField(
        required=False, strip=False, max_length=MAX_SOURCE_CHARS,
        widget=forms.Textarea(attrs={"rows": 16, "cols": 90, "spellcheck": "false"}),
        help_text='the CUDA source with the extern "C" kernel; tunable parameters and sizes arrive as #defines',
    )
    spec = forms.CharField(max_length=MAX_SPEC_CHARS, help_text=SPEC_HELP,
                           widget=forms.Textarea(attrs={"rows": 16, "cols": 90, "spellcheck": "false"}))

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            data["spec"] = spec_from_fields(data.get("source", ""), data["spec"])
            data["name"] = check_new_kernel(data["name"], data["spec"])
        except CustomKernelError as exc:
            self.add_error(exc.field, str(exc))
        return data


NETWORK_TASKS_HELP = (
    'Or list your own tasks as JSON: [{"label": "C2", "template": "conv2d_nchw.cuda", "preset": "C2", "weight": 4}, '
    '{"template": "gemm", "args": [["TENSOR", [512, 768], "float32"], ["TENSOR", [768, 768], "float32"]], "weight": 4}]'
)


class NetworkJobForm(JobRequestForm):
    """A network job: the rules are jobs.network's."""

    network = forms.ChoiceField(required=False, label="Network", initial="resnet18")
    tasks = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 5, "cols": 90}), help_text=NETWORK_TASKS_HELP)
    tuner = forms.ChoiceField()
    n_trial = forms.IntegerField(label="Trial budget", initial=1536, help_text="trials per GPU model, shared by the tasks")
    allocation = forms.ChoiceField(choices=Job.Allocation.choices, initial=Job.Allocation.GRADIENT)
    round_trials = forms.IntegerField(
        required=False, label="Trials per round",
        help_text=f"the budget goes out this many trials at a time (empty: {settings.TUNERWEB_NETWORK_ROUND_TRIALS})",
    )
    gpus = AnyChoices(label="GPUs", widget=forms.CheckboxSelectMultiple,
                      help_text="each GPU model tunes the whole network on every one of its online workers")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["network"].choices = [("", "— my own tasks —")] + [
            (network.name, f"{network.title}: {len(network.tasks)} tasks, {network.occurrences} layers")
            for network in NETWORKS.values()
        ]
        self.fields["tuner"].choices = [(name, name) for name in sorted(TUNERS)]
        self.fields["tuner"].initial = "xgb" if "xgb" in TUNERS else None

    def check(self, data: dict) -> NetworkRequest:
        tasks = None
        if data.get("tasks", "").strip():
            try:
                tasks = json.loads(data["tasks"])
            except json.JSONDecodeError as exc:
                raise forms.ValidationError({"tasks": f"the tasks are not valid JSON ({exc.msg} at line {exc.lineno})"})
        return check_network_request(
            network=data.get("network", ""), tasks=tasks, tuner=data["tuner"], n_trial=data["n_trial"],
            gpus=data["gpus"], allocation=data["allocation"], round_trials=data.get("round_trials"),
        )
