"""Labels in the pages' figures are plain text: a job name holding ``$...$`` (mathtext syntax) is drawn as typed,
never parsed (a stray ``$`` or ``^{`` made matplotlib raise while the timeline page was drawn)."""

from __future__ import annotations

from ekstrain.pages import shell


def test_a_label_with_dollar_signs_is_drawn_as_typed() -> None:
    fig = shell.figure(4, 2)
    ax = fig.add_subplot()
    name = "train-$x^{2$-$\\frac{a}{$"  # unbalanced mathtext: raises ValueError when parsed
    ax.barh([0], [1], label=name)
    ax.set_yticks([0], [name])
    ax.annotate(name, (0.5, 0))
    ax.legend()
    ax.set_title("$5 per hour, $10 at max")
    svg = shell.svg(fig, "t")
    assert svg.count("train-$x^{2$-$\\frac{a}{$") >= 3  # tick label, annotation, legend entry, as text
    assert "$5 per hour, $10 at max" in svg
