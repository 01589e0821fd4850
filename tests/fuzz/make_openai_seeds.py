#!/usr/bin/env python3
"""Writes large OpenAI request bodies into a folder as libFuzzer seeds: JSON nested deep (at, just
past and far past the parser's 64-level limit, inside tool parameters and tool-call arguments)
and wide (128 tools, long message lists, long strings), so that mutations start where the limits
are. Usage: make_openai_seeds.py <out_dir>"""
import json
import os
import sys


def deep(levels, leaf=1):
    return '{"a":' * levels + json.dumps(leaf) + '}' * levels


def chat(tools=None, messages=None):
    body = {"messages": messages or [{"role": "user", "content": "hi"}], "max_tokens": 4}
    if tools is not None:
        body["tools"] = tools
    return body


def tool(name, params_text):
    return '{"type": "function", "function": {"name": "%s", "parameters": %s}}' % (name, params_text)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {}
    for levels in (59, 60, 61, 150000):
        seeds["deep_parameters_%d.json" % levels] = (
            '{"messages": [{"role": "user", "content": "hi"}], "tools": [%s]}' %
            tool("f", deep(levels)))
    seeds["deep_arrays.json"] = '{"prompt": "x", "stop": ' + '[' * 100000 + ']' * 100000 + '}'
    seeds["deep_arguments.json"] = json.dumps(chat(messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "f", "arguments": deep(70)}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]))
    wide_tools = [json.loads(tool("t%d" % i, json.dumps(
        {"type": "object", "properties": {"p%d" % k: {"type": "string"} for k in range(8)}})))
        for i in range(128)]
    seeds["wide_tools.json"] = json.dumps(chat(tools=wide_tools))
    seeds["wide_messages.json"] = json.dumps(chat(messages=[
        {"role": "user" if i % 2 == 0 else "assistant", "content": "turn %d" % i}
        for i in range(4000)]))
    seeds["long_string.json"] = json.dumps(chat(messages=[{"role": "user", "content": "x" * 900000}]))
    seeds["wide_logit_bias.json"] = json.dumps(
        {"prompt": "x", "logit_bias": {str(i): 1 for i in range(1024)}})
    # Image parts: a data: URL (its base64 decoded, not the image: the server decodes that),
    # the string form, a remote URL, and more images than a request may carry.
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=",
                                                "detail": "low"}}
    seeds["image_parts.json"] = json.dumps(chat(messages=[{"role": "user", "content": [
        {"type": "text", "text": "a"}, image, {"type": "image_url", "image_url": "data:;base64,aGk"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]))
    seeds["many_images.json"] = json.dumps(chat(messages=[{"role": "user", "content": [image] * 17}]))
    for name, text in seeds.items():
        assert len(text) <= 1 << 20, name
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
