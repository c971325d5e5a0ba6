"""Figures tell every method apart: the success plot gives each method its own colour."""

from __future__ import annotations

import tepa_envs.agents.evaluation.outputs.report as report
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.memories.registry import METHOD_NAMES


def test_every_registered_method_gets_its_own_colour():
    styles = report.method_styles(METHOD_NAMES)
    assert len({colour for colour, _ in styles.values()}) == len(METHOD_NAMES) > 20


def test_no_two_methods_share_colour_and_linestyle_up_to_240():
    names = [f"m{i}" for i in range(240)]
    styles = report.method_styles(names)
    assert len({colour for colour, _ in styles.values()}) == 60
    assert len(set(styles.values())) == 240


def test_the_success_plot_draws_each_method_in_its_style(tmp_path, monkeypatch):
    methods = list(METHOD_NAMES)
    evaluation = evaluate("TEPA/RegimeDrift-v0", methods, range(2))
    drawn, labels = {}, []

    def capture(fig, path):
        for line in fig.axes[0].get_lines():
            label = str(line.get_label())
            if not label.startswith("_"):
                drawn[label.split(" (= ")[0]] = (tuple(line.get_color()), line.get_linestyle())
                labels.append(label)

    monkeypatch.setattr(report, "write_figure_atomic", capture)
    report.plot_success(summarize(evaluation, n_perm=100), tmp_path / "success.png")
    assert drawn == report.method_styles(methods)
    assert len({colour for colour, _ in drawn.values()}) == len(methods)
    summary = summarize(evaluation, n_perm=100)
    for method in methods:  # a method equal to an earlier one at every task is named as such
        curve = summary.per_task_success[method]
        earlier = [m for m in methods[:methods.index(method)] if list(summary.per_task_success[m]) == list(curve)]
        assert (f"{method} (= {earlier[0]}, drawn over it)" if earlier else method) in labels
    assert any(" (= lww, drawn over it)" in label for label in labels)  # temporal-recency: one policy with LWW
