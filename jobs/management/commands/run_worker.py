from django.core.management.base import BaseCommand, CommandError

from engine import RecordingError
from jobs.worker import already_running, exec_worker, gpu_config, replay_config


class Command(BaseCommand):
    help = (
        "Run a tuning worker for one GPU (--gpu N) or, without a GPU, for a replay recording "
        "(--replay FILE): a Celery worker on the queue named after the GPU model, one job at a time."
    )

    def add_arguments(self, parser):
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--gpu", type=int, metavar="N", help="CUDA device index")
        where.add_argument("--replay", metavar="FILE",
                           help="AutoTVM log (.log or .log.gz) or Kernel Tuner cache (.json or .json.gz) to answer from")
        parser.add_argument("--device", metavar="MODEL",
                            help="replay: the GPU model of a Kernel Tuner cache whose device name is empty")
        parser.add_argument(
            "--pace", type=float, default=0.0, help="replay: seconds each replayed config takes (to watch progress)"
        )
        parser.add_argument(
            "--slot", type=int, default=0, metavar="N",
            help="replay: this worker's number, to run several replay workers of one recording on one host",
        )
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, gpu=None, replay=None, pace=0.0, slot=0, loglevel="INFO", device=None, **options):
        if device and not replay:
            raise CommandError("--device goes with --replay (a GPU worker asks its GPU)")
        try:
            config = replay_config(replay, pace, device, slot=slot) if replay else gpu_config(gpu)
        except (OSError, RecordingError) as exc:
            raise CommandError(str(exc)) from None
        except ImportError as exc:
            raise CommandError(f"no GPU support here ({exc}); install it with: pip install -e '.[gpu]'") from None
        refusal = already_running(config)
        if refusal:
            raise CommandError(refusal)
        self.stderr.write(f"worker {config.name}: queue {config.queue}")
        exec_worker(config, loglevel)
