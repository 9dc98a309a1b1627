# The image a Kubernetes Job runs a loop in (docs/scale.md): studio-agents, git, and the agent's
# CLI, as user 1000 (the manifests run as non-root with a read-only root filesystem).
#
#   docker build -t studio-agents:claude \
#     --build-arg AGENT_INSTALL="npm install -g @anthropic-ai/claude-code" .
#
# AGENT_INSTALL is any shell command that installs the agent CLI (empty: no agent; for a
# command-only agent, copy it in a derived image).

FROM rust:1.89-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/studio-agents target/release/studio-agents-sandbox

FROM debian:bookworm-slim
ARG AGENT_INSTALL=""
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates openssh-client nodejs npm \
 && if [ -n "$AGENT_INSTALL" ]; then sh -c "$AGENT_INSTALL"; fi \
 && npm cache clean --force \
 && apt-get purge -y --auto-remove npm \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 1000 --create-home --home-dir /work/home wiggum
COPY --from=build /src/target/release/studio-agents /src/target/release/studio-agents-sandbox /usr/local/bin/
USER 1000
WORKDIR /work
ENTRYPOINT ["studio-agents"]
