"""URL converters: a GPU model in a path is the slug logs may carry (engine.logfile.MODEL_SLUG)."""
from engine import MODEL_SLUG


class GPUModelConverter:
    regex = MODEL_SLUG.pattern

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
