#!/usr/bin/env python3
"""A producer CLI backed by the local model: the revision prompt on stdin, the revised document
on stdout. Usage: llm-producer.py BASE_URL"""
import json
import os
import sys
import urllib.request

prompt = sys.stdin.read()
temperature = float(os.environ.get("WIGGUM_TEMPERATURE", "0.3"))
body = {"model": "local", "temperature": temperature, "max_tokens": 400,
        "messages": [{"role": "user", "content": prompt}]}
req = urllib.request.Request(sys.argv[1] + "/chat/completions", data=json.dumps(body).encode(),
                             headers={"content-type": "application/json"})
with urllib.request.urlopen(req, timeout=120) as r:
    print(json.load(r)["choices"][0]["message"]["content"])
