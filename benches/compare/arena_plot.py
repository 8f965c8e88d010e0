#!/usr/bin/env python3
"""Planner Arena's two headline plots, from a database of OMPL's ompl_benchmark_statistics:
per problem (experiment name), a box plot of each planner's run time (s, log scale; an
unsolved run counts at its time, the time limit) and its solved percentage; and a table
of the medians on stdout.

    benches/compare/arena_plot.py arena.db arena.png
"""

import sqlite3
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(db: str, png: str) -> None:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT experiments.name, plannerConfigs.name, runs.time, runs.solved "
        "FROM runs JOIN experiments ON runs.experimentid = experiments.id "
        "JOIN plannerConfigs ON runs.plannerid = plannerConfigs.id").fetchall()
    problems = sorted({r[0] for r in rows}, key=[r[0] for r in rows].index)
    planners = sorted({r[1] for r in rows})
    fig, axes = plt.subplots(2, len(problems), figsize=(3.2 * len(problems), 6), squeeze=False)
    print(f"| problem | {' | '.join(planners)} |")
    print(f"|---|{'---|' * len(planners)}")
    for j, prob in enumerate(problems):
        times = [[r[2] for r in rows if r[0] == prob and r[1] == pl] for pl in planners]
        solved = [[r[3] for r in rows if r[0] == prob and r[1] == pl] for pl in planners]
        labels = [pl.replace("_", "\n", 1) for pl in planners]
        ax = axes[0][j]
        ax.boxplot(times, labels=labels)
        ax.set_yscale("log")
        ax.set_title(prob)
        if j == 0:
            ax.set_ylabel("time (s)")
        ax.tick_params(axis="x", labelsize=7)
        ax = axes[1][j]
        pct = [100.0 * sum(s) / len(s) if s else 0.0 for s in solved]
        ax.bar(range(len(planners)), pct, tick_label=labels)
        ax.set_ylim(0, 105)
        if j == 0:
            ax.set_ylabel("solved (%)")
        ax.tick_params(axis="x", labelsize=7)
        cells = [f"{sum(s)}/{len(s)} solved, median {statistics.median(t):.3g} s"
                 for t, s in zip(times, solved)]
        print(f"| {prob} | {' | '.join(cells)} |")
    fig.suptitle("Planner Arena: run time and solved runs per planner", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
