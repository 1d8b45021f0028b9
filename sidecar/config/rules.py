"""Per-key rules of the config schema (defined in ``sidecar.knobs``, re-exported here)."""

from sidecar.knobs import RULE_KEY, Rule, knob, unit

__all__ = ["RULE_KEY", "Rule", "knob", "unit"]
