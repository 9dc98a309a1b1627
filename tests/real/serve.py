#!/usr/bin/env python3
"""Serve a GGUF model with xllamacpp's embedded llama.cpp HTTP server on 127.0.0.1:$PORT
(OpenAI /v1/chat/completions, Anthropic /v1/messages, /health). Prints READY, then blocks until
SIGTERM."""
import os
import signal
import sys
import time

import xllamacpp as xlc

params = xlc.CommonParams()
params.model.path = os.environ["MODEL"]
params.n_ctx = int(os.environ.get("N_CTX", "4096"))
params.n_parallel = 1
threads = int(os.environ.get("THREADS", "1"))
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
params.hostnames = ["127.0.0.1"]
params.port = int(os.environ["PORT"])
params.use_jinja = True
params.model_alias = {"local"}
params.offline = True
server = xlc.Server(params)
print(f"READY {server.listening_address}", flush=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(3600)
