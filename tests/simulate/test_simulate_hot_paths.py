"""The simulator's per-step hot paths keep their answers: a quantity's text is parsed once per process, a refused
text is refused every time (the idle accounting's standing jobs, read once per step, are the timeline tests')."""

from __future__ import annotations

import pytest

from ekstrain.simulate import quantity


def test_a_quantity_text_is_parsed_once_and_a_refused_one_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    quantity._parse_text.cache_clear()
    matched: list[str] = []
    real = quantity._QUANTITY

    class Counting:
        def fullmatch(self, text: str) -> object:
            matched.append(text)
            return real.fullmatch(text)

    monkeypatch.setattr(quantity, "_QUANTITY", Counting())
    assert quantity.parse("16Gi") == quantity.parse("16Gi") == 16 * 2**30
    assert quantity.parse("500m") == 0.5 and quantity.parse(8) == 8.0
    assert matched == ["16Gi", "500m"]
    for _ in range(2):
        with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
            quantity.parse(" 1Gi")
    assert matched == ["16Gi", "500m", " 1Gi", " 1Gi"]
    quantity._parse_text.cache_clear()
