"""Every Vault call takes the agent ids the other calls take: a name of up to 256 characters,
format characters (a zero-width joiner of some scripts) included."""

from __future__ import annotations

import grpc
import pytest
from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import vault_pb2 as v

from sidecar.api.validate import MAX_NAME_CHARS
from tests.conftest import Running
from tests.vault.conftest import history, rpc_error, upsert

LONGEST = "agent-" + "x" * (MAX_NAME_CHARS - 6)  # as long as UpsertMemory and Inject take
JOINED = "\u0915\u094d\u200d\u0937-agent"  # Devanagari with a zero-width joiner (Unicode Cf)


@pytest.mark.parametrize("agent", [LONGEST, JOINED], ids=["256-characters", "zero-width-joiner"])
def test_an_agent_any_call_takes_reads_its_vault(vault_live: Running, agent: str) -> None:
    first = upsert(vault_live, "The vault keeps the deploy runbook in the wiki.",
                   agent_id=agent, type_=m.MEMORY_TYPE_DECISION, tier=m.TIER_REGISTER,
                   topic_id="runbook").memory
    assert first.agent_id == agent
    snap = vault_live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id=agent))
    assert first.id in {x.id for x in snap.registers}
    assert [x.version for x in history(vault_live, first.id, agent)] == [1]
    promoted = vault_live.vault.PromoteToCanon(v.PromoteToCanonRequest(id=first.id,
                                                                       agent_id=agent))
    assert promoted.memory.tier == m.TIER_CANON
    vault_live.vault.FindConsolidationCandidates(v.FindConsolidationCandidatesRequest(
        scope=agent))
    vault_live.vault.ProposeDeletions(v.ProposeDeletionsRequest(scope=agent))


def test_a_longer_agent_id_is_refused_as_everywhere(vault_live: Running) -> None:
    too_long = LONGEST + "x"
    for call in (lambda: vault_live.vault.GetSnapshot(v.GetSnapshotRequest(agent_id=too_long)),
                 lambda: vault_live.vault.ProposeDeletions(
                     v.ProposeDeletionsRequest(scope=too_long))):
        err = rpc_error(call)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"at most {MAX_NAME_CHARS}" in err.details()
