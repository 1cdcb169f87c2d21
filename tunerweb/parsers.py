"""Request bodies read as JSON with the engine's limits (`parse_json`: nesting depth, lone surrogates)."""
from __future__ import annotations

import codecs
import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from engine import parse_json


class LimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
            return parse_json(text)
        except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError and UnreadableJSON are ValueErrors
            if isinstance(exc, json.JSONDecodeError):
                raise ParseError(f"JSON parse error - {exc.msg} at line {exc.lineno} column {exc.colno}") from None
            raise ParseError(f"the body is refused: {exc}") from None
