"""Settings calls. GetConfig is retried on UNAVAILABLE; UpdateConfig is not."""

from __future__ import annotations

from memsidecar.v1 import settings_pb2

from memsidecar_client.transport import Transport


class SettingsCalls(Transport):
    def get_config(self, agent_id: str = "") -> settings_pb2.GetConfigResponse:
        return self._call("GetConfig", self.settings.GetConfig,
                          settings_pb2.GetConfigRequest(agent_id=agent_id), idempotent=True)

    def update_config(self, agent_id: str = "",
                      changes: settings_pb2.MemoryInjectionConfig | None = None, *,
                      reset_override: bool = False) -> settings_pb2.GetConfigResponse:
        """Change the set fields of ``changes`` (empty ``agent_id`` = the defaults)."""
        request = settings_pb2.UpdateConfigRequest(
            agent_id=agent_id, memory_injection=changes,
            reset_memory_injection_override=reset_override)
        return self._call("UpdateConfig", self.settings.UpdateConfig, request, idempotent=False)
