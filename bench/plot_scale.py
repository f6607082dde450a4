#!/usr/bin/env python3
"""Draw `alk bench scale` output as one PNG per curve.

    alk bench scale --on postgres://... > scale.txt
    python3 bench/plot_scale.py scale.txt out/

Each PNG shows jobs/s (left axis) and the probe jobs' enqueue-to-start
latency p50/p99 (right axis, where measured) against the curve's x
(log scale). Needs matplotlib (`pip install matplotlib`); the PNGs are
output, not committed.
"""

import os
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^bench .*scenario=scale ")


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, out = sys.argv[1], sys.argv[2]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_scale.py needs matplotlib: pip install matplotlib")
    curves = defaultdict(list)
    with open(source, encoding="utf-8") as f:
        for line in f:
            if LINE.match(line):
                p = fields(line)
                curves[(p["engine"], p["curve"])].append(p)
    if not curves:
        sys.exit(f"no `scenario=scale` lines in {source}")
    os.makedirs(out, exist_ok=True)
    for (engine, curve), points in sorted(curves.items()):
        points.sort(key=lambda p: float(p["x"]))
        xs = [float(p["x"]) for p in points]
        fig, left = plt.subplots(figsize=(6, 4))
        left.plot(xs, [float(p["jobs_per_s"]) for p in points], "o-", label="jobs/s")
        left.set_xscale("log")
        left.set_xlabel({"backlog": "jobs waiting", "queues": "queues",
                         "processes": "worker processes"}.get(curve, curve))
        left.set_ylabel("claim+ack jobs/s")
        left.set_ylim(bottom=0)
        p50 = [number(p.get("p50_ms", "-")) for p in points]
        if any(v is not None for v in p50):
            right = left.twinx()
            for key, style in (("p50_ms", "s--"), ("p99_ms", "^:")):
                ys = [number(p.get(key, "-")) for p in points]
                right.plot(xs, [y if y is not None else float("nan") for y in ys],
                           style, color="tab:red", label=key)
            right.set_ylabel("enqueue to start, ms", color="tab:red")
            right.set_ylim(bottom=0)
            right.legend(loc="upper right")
        left.legend(loc="upper left")
        left.set_title(f"alk bench scale: {curve} ({engine})")
        fig.tight_layout()
        path = os.path.join(out, f"scale-{engine}-{curve}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(path)


if __name__ == "__main__":
    main()
