#!/usr/bin/python3
"""promote_bulk.py - bulk adoption: `flotilla ctl promote --all` of N Deployments from one member.

    bench/promote_bulk.py [--objects 1000] [--flotilla build/flotilla] [--keep]

Starts `flotilla up --members 1`, creates N Deployments (2 replicas, one container) directly in
member1's namespace `bulk` and waits until the simulator reports them all ready. Then:
  - adoption: the wall time of `flotilla ctl promote deployments --all -n bulk --cluster
    member1` (the CLI: N member reads, N dependency lookups, 2N control-plane creates), and
    until every member object carries karmada.io/managed (the executor took it over);
  - member writes: a watch on member1's Deployments in `bulk` from before the promote until
    every object is taken over and a settle second has passed. Each event is classified
    against the object as it was before: a change of spec or generation (a restart risk), a
    change of labels/annotations only (Flotilla's marks), status only (the simulator's). The
    target is zero of the first kind, and one write per object of the second.
Baseline, same run: N new Deployments in namespace `fresh` on the control plane with one
PropagationPolicy placing them on member1, from the create of the first until the last is in
the member (what delivering the same number of workloads costs when nothing is adopted).
Prints the figures; docs/BENCHMARKS.md records them.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

KUBECTL = "/usr/bin/kubectl"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def deployment(name, ns):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}


def kubectl(kc, *args, input=None):
    r = subprocess.run([KUBECTL, "--kubeconfig", kc, *args], input=input, capture_output=True, text=True,
                       timeout=600)
    if r.returncode:
        sys.exit(f"kubectl {' '.join(args[:3])}: {r.stderr[:500]}")
    return r.stdout


def apply_all(kc, docs):
    kubectl(kc, "apply", "-f", "-", input="".join("---\n" + json.dumps(d) + "\n" for d in docs))


def items(kc, ns, kind="deployments"):
    return json.loads(kubectl(kc, "get", kind, "-n", ns, "-o", "json"))["items"]


def wait(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.25)
    sys.exit(f"timed out waiting for {what}")


class Watch:
    """kubectl's watch of the member's Deployments in ns, as JSON events, counted per kind of change."""

    def __init__(self, kc, ns, before):
        self.before = {o["metadata"]["name"]: o for o in before}
        self.last = dict(self.before)
        self.spec, self.marks, self.status, self.other = 0, 0, 0, 0
        self.p = subprocess.Popen([KUBECTL, "--kubeconfig", kc, "get", "deployments", "-n", ns, "--watch-only",
                                   "--output-watch-events", "-o", "json"], stdout=subprocess.PIPE, text=True)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        dec, buf = json.JSONDecoder(), ""
        for line in self.p.stdout:
            buf += line
            while buf.strip():
                try:
                    ev, end = dec.raw_decode(buf.lstrip())
                except ValueError:
                    break
                buf = buf.lstrip()[end:]
                self.count(ev.get("object") or {})

    def count(self, o):
        name = o.get("metadata", {}).get("name")
        prev = self.last.get(name)
        self.last[name] = o
        if prev is None:
            self.other += 1
            return
        pm, om = prev["metadata"], o["metadata"]
        if prev.get("spec") != o.get("spec") or pm.get("generation") != om.get("generation"):
            self.spec += 1
        elif pm.get("labels") != om.get("labels") or pm.get("annotations") != om.get("annotations"):
            self.marks += 1
            if os.environ.get("PROMOTE_BENCH_DEBUG") and (pm.get("labels") or {}).get("karmada.io/managed"):
                a = {**(pm.get("labels") or {}), **(pm.get("annotations") or {})}
                b = {**(om.get("labels") or {}), **(om.get("annotations") or {})}
                print("second write", name, {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)})
        elif prev.get("status") != o.get("status"):
            self.status += 1
        else:
            self.other += 1

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--flotilla", default="build/flotilla")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    flotilla = os.path.abspath(a.flotilla)
    d = tempfile.mkdtemp(prefix="flotilla-bench-promote-")
    up = subprocess.Popen([flotilla, "up", "--data-dir", d, "--members", "1", "--listen",
                           f"127.0.0.1:{free_port()}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = ""
    for _ in range(50):  # its progress lines, then "Flotilla is up"
        line = up.stdout.readline()
        if not line or "Flotilla is up" in line:
            break
    if "Flotilla is up" not in line:
        up.kill()
        sys.exit(f"flotilla up: {line}")
    cp, m1 = os.path.join(d, "kubeconfig"), os.path.join(d, "members", "member1.kubeconfig")
    n = a.objects
    try:
        kubectl(m1, "create", "namespace", "bulk")
        t0 = time.time()
        apply_all(m1, [deployment(f"app-{i:04d}", "bulk") for i in range(n)])
        wait(lambda: sum(1 for o in items(m1, "bulk") if (o.get("status") or {}).get("readyReplicas") == 2) == n,
             600, "the member's Deployments to be ready")
        print(f"setup: {n} Deployments created and ready in member1 in {time.time() - t0:.1f}s")
        before = items(m1, "bulk")
        w = Watch(m1, "bulk", before)
        time.sleep(0.5)

        t0 = time.time()
        r = subprocess.run([flotilla, "ctl", "--kubeconfig", cp, "promote", "deployments", "--all", "-n", "bulk",
                            "--cluster", "member1"], capture_output=True, text=True, timeout=1200)
        cli_s = time.time() - t0
        if r.returncode:
            sys.exit(f"promote: {r.stderr[-2000:]}")
        last = r.stdout.strip().splitlines()[-1]
        wait(lambda: sum(1 for o in items(m1, "bulk")
                         if (o["metadata"].get("labels") or {}).get("karmada.io/managed") == "true") == n,
             1200, "every member object taken over")
        adopt_s = time.time() - t0
        time.sleep(1.0)
        w.stop()
        after = {o["metadata"]["name"]: o for o in items(m1, "bulk")}
        gen_moved = sum(1 for o in before if after[o["metadata"]["name"]]["metadata"]["generation"] !=
                        o["metadata"]["generation"])
        tmpl_moved = sum(1 for o in before if after[o["metadata"]["name"]]["spec"] != o["spec"])

        # baseline: the same number of new workloads propagated to the member
        kubectl(cp, "create", "namespace", "fresh")
        policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                  "metadata": {"name": "fresh", "namespace": "fresh"},
                  "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                           "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}}
        t0 = time.time()
        apply_all(cp, [policy] + [deployment(f"app-{i:04d}", "fresh") for i in range(n)])
        wait(lambda: len(items(m1, "fresh")) == n, 1200, "the baseline's Deployments in member1")
        base_s = time.time() - t0

        print(f"promote CLI: {cli_s:.1f}s ({last})")
        print(f"adopted (every member object managed): {adopt_s:.1f}s; baseline, {n} new Deployments propagated "
              f"to member1: {base_s:.1f}s; ratio {adopt_s / base_s:.2f}x")
        print(f"member writes during adoption: {w.marks} labels/annotations only, {w.spec} spec or generation, "
              f"{w.status} status only (the simulator), {w.other} other; objects whose generation moved: "
              f"{gen_moved}, whose spec changed: {tmpl_moved} (of {n})")
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=120)
        except subprocess.TimeoutExpired:
            up.kill()
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
