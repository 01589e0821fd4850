#!/usr/bin/env python3
"""Renders every *.jinja template here over the conversations in conversations.json with Python's
jinja2, configured the way Hugging Face transformers' apply_chat_template configures it, and
writes expected.json: {template file: {conversation name: {"output": text} or {"error": text}}}.

The jinja_conformance_test requires Sparrow's interpreter to produce the same bytes, or to fail
where jinja2 fails. Run from anywhere: python3 tests/data/chat_templates/render_expected.py

The environment mirrors transformers' _compile_jinja_template: ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks on, the loopcontrols extension, a {% generation %} block that
renders its body inside a call block, tojson as json.dumps (ensure_ascii False, sort_keys False),
and the raise_exception and strftime_now globals. strftime_now reads the fixed date of the
conversation's `sparrow_now` so that the outputs do not depend on the day they were made.
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


class GenerationBlock(Extension):
    """transformers' AssistantTracker without the mask bookkeeping: the body is rendered as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    names = sorted(n for n in os.listdir(HERE) if n.endswith(".jinja"))
    expected = {}
    for name in names:
        with open(os.path.join(HERE, name), encoding="utf-8", newline="") as f:
            source = f.read()
        per_template = {}
        for conv in conversations:
            context = conv["context"]
            now = datetime.datetime.fromisoformat(context["sparrow_now"])
            try:
                text = make_env(now).from_string(source).render(**context)
                per_template[conv["name"]] = {"output": text}
            except Exception as e:  # jinja2 raised: Sparrow must fail too
                per_template[conv["name"]] = {"error": f"{type(e).__name__}: {e}"}
        expected[name] = per_template
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")
    failed = sum(1 for t in expected.values() for r in t.values() if "error" in r)
    print(f"jinja2 {jinja2.__version__}: {len(names)} templates x {len(conversations)} "
          f"conversations, {failed} renders raise", file=sys.stderr)


if __name__ == "__main__":
    main()
