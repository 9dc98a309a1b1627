#!/usr/bin/env python3
"""The loop's costs against the floors people would otherwise pay, measured in one process.

Run through benches/run.sh (which builds release first). Prints figures and ratios; asserts
nothing. Sections:
  overhead  per-iteration overhead of `wiggum start --foreground` against the bash loop
            `while :; do cat PROMPT.md | agent; git add -A; git commit; done` on repositories of
            10 / 10k / 100k files (fixed seed), interleaved runs (ours with gate and sandbox off,
            ours with the defaults, bash, agent only), medians; then one loop with the defaults
            timed step by step through the supervisor's own step timings (`timing=debug`)
  growth    time per iteration of the last 100 of 1000 iterations against the first 100, a
            trend robust to scheduler noise, and the supervisor's peak RSS over the run (on
            tmpfs when /dev/shm is writable)
  control   `status`/`list` with 100 registered loops, `stop`, `start`, each against its floor
  report    `wiggum report` over a 1M-line runs.jsonl in the shape the loop writes
  judge     the built-in judge (`wiggum gate --evaluator heuristic`, one round) on a 60 KB
            document made of the judge's corpus and docs/, whole (evaluator_input_chars raised),
            against the same command on a one-line document; the difference is the judging,
            which should stay under 50 ms
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("STUDIO_AGENTS_BIN") or os.path.join(ROOT, "target", "release", "studio-agents")

AGENT = """#!/bin/sh
# A trivial agent: reads its prompt, changes one file.
cat > /dev/null
echo "iteration $$" >> notes.txt
"""

# A trivial agent whose work the built-in gate accepts: it also writes a finished document
# (tests/fixtures/good-artifact.md under a title naming the loop, which is what its task names) as the
# iteration's artifact (the bash loop's: ./artifact.md),
# so no iteration needs a revision round.
ACCEPTED = """#!/bin/sh
cat > /dev/null
{ echo "# $TOPIC"; cat '%s'; } > "${ITERATION_DIR:-.}/artifact.md"
echo "iteration $$" >> notes.txt
""" % os.path.join(ROOT, "tests", "fixtures", "good-artifact.md")


def load():
    return os.getloadavg()[0]


def run(cmd, env=None, cwd=None, check=True, stdin=None):
    return subprocess.run(
        cmd, env=env, cwd=cwd, check=check, stdin=stdin,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def timed(cmd, **kw):
    # Whatever was written before (the fresh copies of a large repository, the run before)
    # goes to disk now, not in the middle of the timed command.
    os.sync()
    t0 = time.perf_counter()
    run(cmd, **kw)
    return time.perf_counter() - t0


def git(repo, *args):
    run(["git", "-C", repo, *args])


def gen_repo(path, files, seed):
    """A repository of `files` files in directories of 100, committed and gc'd, auto-gc off."""
    rng = random.Random(seed)
    os.makedirs(path)
    for i in range(files):
        d = os.path.join(path, "src", "d%04d" % (i // 100))
        if i % 100 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%06d.txt" % i), "w") as f:
            f.write("%016x\n" % rng.getrandbits(64) * rng.randint(1, 8))
    with open(os.path.join(path, "artifact.md"), "w") as f:
        f.write("# Notes\n\nA document the loop refines.\n")
    os.makedirs(os.path.join(path, "wiggum"))
    with open(os.path.join(path, "wiggum", "fix_plan.md"), "w") as f:
        f.write("# Plan\n\n" + "".join("- [ ] step %d\n" % i for i in range(5000)))
    with open(os.path.join(path, "PROMPT.md"), "w") as f:
        f.write("Do one step of the plan.\n")
    git(path, "init", "-q")
    git(path, "config", "gc.auto", "0")
    git(path, "config", "user.name", "bench")
    git(path, "config", "user.email", "bench@example.com")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    git(path, "gc", "-q")


def fresh_copy(base, dst):
    run(["cp", "-a", base, dst])
    git(dst, "update-index", "-q", "--refresh")


class Bench:
    def __init__(self, work):
        self.work = work
        self.agent = os.path.join(work, "agent.sh")
        self.accepted = os.path.join(work, "accepted.sh")
        for path, text in [(self.agent, AGENT), (self.accepted, ACCEPTED)]:
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.seq = 0

    def home(self, extra="", where=None, defaults=False):
        self.seq += 1
        home = os.path.join(where or self.work, "home%d" % self.seq)
        os.makedirs(home)
        with open(os.path.join(home, "wiggum.toml"), "w") as f:
            if defaults:
                # A loop as people run it: the built-in gate and the sandbox on. The gate
                # evaluates every iteration as it does by default; its pass mark is set where
                # the accepted agent's document (7.6 for a task that is only the loop's name)
                # passes, and a document that good must not end the loop before its iterations.
                f.write('[defaults]\nquality_threshold = 1.0\npass_threshold = 7.0\n'
                        '[safety]\nmax_cost_per_loop = 0\nmax_no_change_iterations = 0\n')
            else:
                # The bash loop has no gate and no sandbox: neither is part of the overhead
                # compared.
                f.write('[defaults]\nquality_threshold = 1.0\n'
                        '[gate]\ntarget = "off"\n[safety]\nsandbox = "off"\n'
                        'max_cost_per_loop = 0\n')
                f.write('max_no_change_iterations = 0\n')
            f.write(extra)
        env = dict(os.environ, STUDIO_AGENTS_HOME=home, STUDIO_AGENTS_LOG="")
        return home, env

    def ours(self, repo, n, extra="", defaults=False, log=None, binary=None, agent=None,
             runs=None):
        """Seconds for our loop of `n` iterations; `runs`, when given, must be the number of
        agent runs it made per iteration (the bench's arithmetic depends on it)."""
        home, env = self.home(extra, defaults=defaults)
        if log:
            env["STUDIO_AGENTS_LOG"] = log
        cmd = [binary or BIN, "wiggum", "start", "b%d" % self.seq, "--foreground", "--artifact-path", repo,
               "--agent-cmd", agent or self.agent, "--max-iterations", str(n)]
        t = timed(cmd, env=env)
        commits = int(subprocess.check_output(["git", "-C", repo, "rev-list", "--count", "HEAD"]))
        if commits < n + 1:
            sys.exit("our loop made %d commits in %s, expected %d" % (commits - 1, repo, n))
        if runs is not None:
            # Each agent run leaves its prompt in the loop's records: prompt.md for the
            # iteration's, revision-rN.prompt.md for each revision round's.
            made = sum(1 for _, _, names in os.walk(os.path.join(home, "runs"))
                       for name in names if name == "prompt.md" or name.endswith(".prompt.md"))
            if made != runs * n:
                sys.exit("our loop made %d agent runs in %s, expected %d" % (made, repo, runs * n))
        return t

    def bash(self, repo, n, agent=None):
        script = ('i=0; while [ $i -lt %d ]; do cat PROMPT.md | "%s"; git add -A; '
                  'git commit -q -m "iteration $i"; i=$((i+1)); done') % (n, agent or self.agent)
        return timed(["bash", "-c", script], cwd=repo)

    def agent_only(self, repo, n, agent=None):
        script = 'i=0; while [ $i -lt %d ]; do cat PROMPT.md | "%s"; i=$((i+1)); done' % (
            n, agent or self.agent)
        return timed(["bash", "-c", script], cwd=repo)


def ms(x):
    return "%.1f ms" % (x * 1000)


def overhead(b, sizes, n, reps, baseline=None):
    print("## Per-iteration overhead (total − the agent's own time for each run) / %d iterations,"
          " median of %d" % (n, reps))
    print("The agent writes a document the built-in gate accepts, so each iteration runs it once."
          " ours: gate and sandbox off (as the bash loop); defaults: gate and sandbox on, as a"
          " user gets them%s; revised: the defaults with an agent whose work the gate sends back"
          " once each iteration (two runs an iteration, the agent's time subtracted for both)"
          % ("; baseline: the defaults with " + baseline if baseline else ""))
    print()
    cols = ["ours", "defaults"] + (["baseline"] if baseline else []) + ["revised"]
    print("| files | bash loop | %s | load |" % " | ".join("%s | ratio" % c for c in cols))
    print("|---|---|%s---|" % ("---|---|" * len(cols)))
    for files in sizes:
        base = os.path.join(b.work, "base%d" % files)
        gen_repo(base, files, seed=files)
        got, s, l = {c: [] for c in cols}, [], []
        # The rounds' copies are removed once the size is done, not between rounds, where
        # copies allow (up to a million files in all): on a file system that skips recently
        # freed inodes one by one at every creation (ext4 without a journal), the bench's own
        # removals would slow the next round's loops by what they freed, not by what they do.
        defer = files * (len(cols) + 3) * reps <= 1_000_000
        made = []
        for r in range(reps):
            la = load()
            copies = {}
            for kind in cols + ["bash", "agent", "agent2"]:
                copies[kind] = os.path.join(b.work, "%s-%d-%d" % (kind, files, r))
                fresh_copy(base, copies[kind])
            ok = b.accepted
            took = {
                "ours": lambda: b.ours(copies["ours"], n, agent=ok, runs=1),
                "defaults": lambda: b.ours(copies["defaults"], n, defaults=True, agent=ok, runs=1),
                "baseline": lambda: b.ours(copies["baseline"], n, defaults=True, binary=baseline,
                                           agent=ok, runs=1),
                "revised": lambda: b.ours(copies["revised"], n, defaults=True, runs=2),
            }
            # Alternate which build goes first, so neither always runs on a warmer cache.
            order = cols if r % 2 == 0 or not baseline else \
                ["ours", "baseline", "defaults", "revised"]
            t = {c: took[c]() for c in order}
            t_bash = b.bash(copies["bash"], n, agent=ok)
            t_agent = {"accepted": b.agent_only(copies["agent"], n, agent=ok),
                       "revised": b.agent_only(copies["agent2"], n)}
            for c in cols:
                if c == "revised":
                    got[c].append((t[c] - 2 * t_agent["revised"]) / n)
                else:
                    got[c].append((t[c] - t_agent["accepted"]) / n)
            s.append((t_bash - t_agent["accepted"]) / n)
            l.append(la)
            made.extend(copies.values())
            if not defer:
                for c in made:
                    shutil.rmtree(c)
                made = []
        for c in made:
            shutil.rmtree(c)
        mb = statistics.median(s)
        figures = " | ".join("%s | %.2f×" % (ms(statistics.median(got[c])),
                                              statistics.median(got[c]) / mb) for c in cols)
        print("| %d | %s | %s | %.2f |" % (files, ms(mb), figures, statistics.median(l)))
        shutil.rmtree(base)
    print()
    steps(b, sizes[0], n)


# A step's line in daemon.log: `… DEBUG timing: step="snapshot" us=812`.
STEP = re.compile(r'timing: step="?([\w.]+)"? us=(\d+)')


def steps(b, files, n):
    """One loop with the defaults, each iteration's steps as the supervisor timed them."""
    base = os.path.join(b.work, "steps-base")
    gen_repo(base, files, seed=files)
    repo = os.path.join(b.work, "steps")
    fresh_copy(base, repo)
    la = load()
    b.ours(repo, n, defaults=True, log="info,timing=debug", agent=b.accepted, runs=1)
    per = {}  # step -> [total µs in each iteration]
    count = {}
    current = {}
    with open(os.path.join(repo, "wiggum", "daemon.log"), errors="replace") as f:
        for line in f:
            m = STEP.search(line)
            if not m:
                continue
            name, us = m.group(1), int(m.group(2))
            current.setdefault(name, []).append(us)
            if name == "iteration":
                for k, v in current.items():
                    per.setdefault(k, []).append(sum(v))
                    count.setdefault(k, []).append(len(v))
                current = {}
    iters = len(per.get("iteration", []))
    print("## One iteration with the defaults, step by step (%d files, median of %d iterations,"
          " load %.2f)" % (files, iters, la))
    print("| step | times per iteration | time per iteration |")
    print("|---|---|---|")
    for name in sorted(per, key=lambda k: -statistics.median(per[k])):
        # A step missing from some iterations counts as 0 there.
        values = per[name] + [0] * (iters - len(per[name]))
        print("| %s | %g | %.2f ms |" % (name, statistics.median(count[name]),
                                        statistics.median(values) / 1000))
    print()
    shutil.rmtree(repo)
    shutil.rmtree(base)


def parse_ts(s):
    # 2026-11-23T10:55:44.672726050Z → seconds
    day, rest = s.rstrip("Z").split("T")
    h, m, sec = rest.split(":")
    return int(h) * 3600 + int(m) * 60 + float(sec)


def growth(b, n):
    # On tmpfs when there is one: what grows with the loop's age is its own work, and a VM's
    # disk write-back swings a 40-iteration window by ±30 % from run to run.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    where = tempfile.mkdtemp(prefix="studio-agents-growth-", dir=shm) if shm else b.work
    try:
        growth_in(b, n, where, shm)
    finally:
        if where != b.work:
            shutil.rmtree(where, ignore_errors=True)


def growth_in(b, n, where, shm):
    print("## Growth over %d iterations (10 files%s)" % (n, ", tmpfs" if shm else ""))
    base = os.path.join(where, "growth-base")
    gen_repo(base, 10, seed=10)
    repo = os.path.join(where, "growth")
    fresh_copy(base, repo)
    home, env = b.home(where=where)
    cmd = [BIN, "wiggum", "start", "grow", "--foreground", "--artifact-path", repo,
           "--agent-cmd", b.agent, "--max-iterations", str(n)]
    la = load()
    out = os.path.join(b.work, "time.out")
    t = timed(["/usr/bin/time", "-f", "%M", "-o", out, *cmd], env=env)
    peak = int(open(out).read().split()[-1])
    log = None
    for root, _, names in os.walk(home):
        if "runs.jsonl" in names:
            log = os.path.join(root, "runs.jsonl")
    starts = []
    for path in [log, os.path.join(repo, "wiggum", "runs.jsonl")]:
        if path and os.path.exists(path):
            with open(path) as f:
                starts = [parse_ts(json.loads(x)["started_at"]) for x in f
                          if '"record":"iteration"' in x]
            break
    per = [b2 - a for a, b2 in zip(starts, starts[1:])]
    # Medians of the first and last tenth (at most 100 iterations each), and a trend robust to
    # the scheduler's noise: the median over i of (per[i + half] - per[i]) / half, times the
    # iterations between the two windows' middles.
    w = max(1, min(100, len(per) // 10))
    early = statistics.median(per[:w]) if per else 0
    late = statistics.median(per[-w:]) if per else 0
    half = len(per) // 2
    slope = statistics.median((per[i + half] - per[i]) / half for i in range(half)) if half else 0
    trend = slope * (len(per) - w)
    print("| figure | value | load |")
    print("|---|---|---|")
    print("| time per iteration, iterations 1–%d | %s | %.2f |" % (w, ms(early), la))
    print("| time per iteration, iterations %d–%d | %s (%+.0f %%) | %.2f |"
          % (n - w, n, ms(late), (late / early - 1) * 100 if early else 0, load()))
    print("| trend over the run (median of paired differences) | %+.2f ms (%+.0f %%) | |"
          % (trend * 1000, trend / early * 100 if early else 0))
    print("| whole run | %.1f s | |" % t)
    print("| supervisor peak RSS over %d iterations | %.1f MiB | |" % (n, peak / 1024))
    # The same loop as people run it (gate and sandbox on): the memory figure that counts.
    repo2 = os.path.join(where, "growth-defaults")
    fresh_copy(base, repo2)
    _, env = b.home(where=where, defaults=True)
    cmd = [BIN, "wiggum", "start", "grow", "--foreground", "--artifact-path", repo2,
           "--agent-cmd", b.agent, "--max-iterations", str(n)]
    timed(["/usr/bin/time", "-f", "%M", "-o", out, *cmd], env=env)
    peak = int(open(out).read().split()[-1])
    done = int(subprocess.check_output(["git", "-C", repo2, "rev-list", "--count", "HEAD"])) - 1
    print("| the same with the gate and the sandbox on (defaults), %d iterations | %.1f MiB | |"
          % (done, peak / 1024))
    print()
    shutil.rmtree(base)


def wait_agent(state):
    """Until the loop whose state file this is has its agent running."""
    deadline = time.time() + 30
    while True:
        s = open(state).read() if os.path.exists(state) else ""
        if '"agent_pid": ' in s and '"agent_pid": null' not in s:
            return
        if time.time() > deadline:
            sys.exit("the loop did not start its agent: " + state)
        time.sleep(0.01)


def median_ms(cmd, reps, **kw):
    return statistics.median(timed(cmd, **kw) for _ in range(reps))


def control(b, loops, reps):
    print("## Control plane, %d registered loops (%d running), median of %d" % (loops, 2, reps))
    home, env = b.home()
    arts = []
    for i in range(loops):
        art = os.path.join(b.work, "cp", "a%03d" % i)
        os.makedirs(os.path.join(art, "wiggum"))
        with open(os.path.join(art, "artifact.md"), "w") as f:
            f.write("# Doc\n")
        with open(os.path.join(art, "wiggum", "fix_plan.md"), "w") as f:
            f.write("- [ ] one\n")
        arts.append(art)
        run([BIN, "wiggum", "start", "t%03d" % i, "--foreground", "--artifact-path", art,
             "--agent-cmd", b.agent, "--max-iterations", "1"], env=env)
    running = []
    for i in range(2):
        art = arts[i]
        run([BIN, "wiggum", "start", "t%03d" % i, "--agent-cmd", "sleep 1000",
             "--max-iterations", "2"], env=env)
        running.append(art)
    for art in running:
        wait_agent(os.path.join(art, "wiggum", "state.json"))
    states = [os.path.join(a, "wiggum", "state.json") for a in arts]
    rows = [
        ("`status t000` (running)", [BIN, "wiggum", "status", "t000"], ["cat", states[0]]),
        ("`status` (ended)", [BIN, "wiggum", "status", "t%03d" % (loops // 2)],
         ["cat", states[loops // 2]]),
        ("`list`", [BIN, "wiggum", "list"], ["cat", *states]),
        ("`list --json`", [BIN, "wiggum", "list", "--json"], ["cat", *states]),
    ]
    print("| command | ours | floor | floor is | load |")
    print("|---|---|---|---|---|")
    for name, ours, floor in rows:
        la = load()
        o = median_ms(ours, reps, env=env)
        f = median_ms(floor, reps)
        print("| %s | %s | %s | `%s` | %.2f |" % (name, ms(o), ms(f), os.path.basename(floor[0])
                                                 + (" %d state files" % (len(floor) - 1)), la))
    # stop: an agent that obeys TERM, against TERM + wait of a bare process.
    so, sf, st, sb = [], [], [], []
    for r in range(reps):
        p = subprocess.Popen(["sleep", "1000"])
        t0 = time.perf_counter()
        p.send_signal(signal.SIGTERM)
        p.wait()
        sf.append(time.perf_counter() - t0)
        topic = "t%03d" % (r % 2)
        art = arts[r % 2]
        if r >= 2:
            run([BIN, "wiggum", "start", topic, "--agent-cmd", "sleep 1000",
                 "--max-iterations", "2"], env=env)
        state = os.path.join(art, "wiggum", "state.json")
        wait_agent(state)
        so.append(timed([BIN, "wiggum", "stop", topic], env=env))
        # start (detached), against spawning a detached process that returns at once.
        st.append(timed([BIN, "wiggum", "start", topic, "--agent-cmd", "sleep 1000",
                         "--max-iterations", "2"], env=env))
        sb.append(timed(["setsid", "-f", "true"]))
        wait_agent(state)
        run([BIN, "wiggum", "stop", topic], env=env)
    print("| `stop` (agent obeys TERM) | %s | %s | TERM + wait of `sleep` | %.2f |"
          % (ms(statistics.median(so)), ms(statistics.median(sf)), load()))
    print("| `start` (detached) | %s | %s | `setsid -f true` | %.2f |"
          % (ms(statistics.median(st)), ms(statistics.median(sb)), load()))
    print()


def report(b, lines):
    print("## `report` over %d runs.jsonl lines" % lines)
    home, env = b.home()
    art = os.path.join(b.work, "rep")
    os.makedirs(os.path.join(art, "wiggum"))
    with open(os.path.join(home, "wiggum.toml"), "a"):
        pass
    os.makedirs(os.path.join(home, "loops"), exist_ok=True)
    with open(os.path.join(home, "loops", "long.toml"), "w") as f:
        f.write('artifact_path = "%s"\n' % art)
    src = open(os.path.join(ROOT, "tests", "fixtures", "v0.1.0", "runs.jsonl")).read().splitlines()
    log = os.path.join(art, "wiggum", "runs.jsonl")
    with open(log, "w") as f:
        for i in range(lines):
            f.write(src[i % len(src)] + "\n")
    size = os.path.getsize(log)
    # Timed once the generated file is on disk: the kernel flushing 700 MB of dirty pages
    # under the read would be measured instead of `report`.
    os.sync()
    out = os.path.join(b.work, "time.out")
    la = load()
    run(["/usr/bin/time", "-f", "%e %M", "-o", out, BIN, "wiggum", "report", "long"], env=env)
    secs, kib = open(out).read().split()[-2:]
    run(["/usr/bin/time", "-f", "%e %M", "-o", out, "python3", "-c",
         "import json,sys\nn=0\nfor l in open(sys.argv[1]):\n n+=json.loads(l).get('record')=='iteration'\n",
         log])
    bsecs, bkib = open(out).read().split()[-2:]
    print("| | time | peak RSS | load |")
    print("|---|---|---|---|")
    print("| `wiggum report` (%d MB) | %s s | %.1f MiB | %.2f |"
          % (size // 1_000_000, secs, int(kib) / 1024, la))
    print("| streaming script that only parses each line | %s s | %.1f MiB | |"
          % (bsecs, int(bkib) / 1024))
    print()


JUDGE_TASK = ("Write a research report on HTTP caching headers (Cache-Control, ETag) "
              "for our CDN team")


def judge_doc(size):
    """`size` bytes of real Markdown: the judge's good documents and docs/, in a fixed order."""
    names = sorted(os.listdir(os.path.join(ROOT, "tests", "fixtures", "judge")))
    paths = [os.path.join(ROOT, "tests", "fixtures", "judge", n) for n in names
             if n.endswith(".md") and "good" in n]
    paths += [os.path.join(ROOT, "docs", n) for n in sorted(os.listdir(os.path.join(ROOT, "docs")))
              if n.endswith(".md")]
    out = b""
    while len(out) < size:
        for p in paths:
            with open(p, "rb") as f:
                out += f.read() + b"\n"
    return out[:size].decode("utf-8", "ignore")


def judge(b, reps):
    print("## The built-in judge on a 60 KB document, median of %d" % reps)
    _, env = b.home('[gate]\nevaluator_input_chars = 100000\n', defaults=True)
    rows = []
    for name, text in [("60 KB document", judge_doc(60_000)), ("one-line document", "# A\n")]:
        path = os.path.join(b.work, "judge-%d.md" % len(text))
        with open(path, "w") as f:
            f.write(text)
        cmd = [BIN, "wiggum", "gate", JUDGE_TASK, path, "--evaluator", "heuristic",
               "--max-rounds", "1", "--json"]
        la = load()
        secs = statistics.median(timed(cmd, env=env, check=False) for _ in range(reps))
        rows.append((name, secs, la))
    print("| `wiggum gate --evaluator heuristic` on | time | load |")
    print("|---|---|---|")
    for name, secs, la in rows:
        print("| %s | %.1f ms | %.2f |" % (name, secs * 1000, la))
    judged = (rows[0][1] - rows[1][1]) * 1000
    print()
    print("judging 60 KB: %.1f ms (the difference; the goal is under 50 ms)" % judged)
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks the harness runs")
    ap.add_argument("--only", choices=["overhead", "growth", "control", "report", "judge"])
    ap.add_argument("--sizes", help="repository sizes for overhead, e.g. 10,10000")
    ap.add_argument("--reps", type=int, help="rounds of the overhead section (3)")
    ap.add_argument("--baseline", help="another build, run with the defaults beside ours in"
                    " the overhead section (a change's before and after in one run)")
    a = ap.parse_args()
    if a.smoke:
        sizes, n, reps, grow, loops, lines = [10, 200], 5, 1, 30, 10, 2000
    else:
        sizes, n, reps, grow, loops, lines = [10, 10_000, 100_000], 30, 3, 1000, 100, 1_000_000
    if a.sizes:
        sizes = [int(x) for x in a.sizes.split(",")]
    if a.reps:
        reps = a.reps
    work = tempfile.mkdtemp(prefix="studio-agents-bench-")
    try:
        b = Bench(work)
        print("# %s, %d cores, %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                      os.cpu_count(), subprocess.check_output(
                                          ["git", "--version"]).decode().strip()))
        print()
        if a.only in (None, "overhead"):
            overhead(b, sizes, n, reps, a.baseline)
        if a.only in (None, "growth"):
            growth(b, grow)
        if a.only in (None, "control"):
            control(b, loops, max(reps, 5))
        if a.only in (None, "report"):
            report(b, lines)
        if a.only in (None, "judge"):
            judge(b, 3 if a.smoke else 15)
    finally:
        # Stop anything still running before the work dir goes.
        for root, dirs, _ in os.walk(work):
            for d in dirs:
                if d.startswith("home"):
                    env = dict(os.environ, STUDIO_AGENTS_HOME=os.path.join(root, d))
                    subprocess.run([BIN, "wiggum", "stop", "--all"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            break
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
