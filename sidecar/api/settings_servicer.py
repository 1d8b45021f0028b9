"""Settings servicer: GetConfig / UpdateConfig over the live ConfigStore."""

from __future__ import annotations

import grpc
from memsidecar.v1 import settings_pb2, settings_pb2_grpc

from sidecar.api.settings_convert import changes_from_pb, config_response
from sidecar.api.status import grpc_errors
from sidecar.config.store import ConfigStore


class SettingsServicer(settings_pb2_grpc.SettingsServicer):
    def __init__(self, store: ConfigStore) -> None:
        self.store = store

    @grpc_errors
    def GetConfig(
        self, request: settings_pb2.GetConfigRequest, context: grpc.ServicerContext
    ) -> settings_pb2.GetConfigResponse:
        return config_response(self.store.agent(request.agent_id))

    @grpc_errors
    def UpdateConfig(
        self, request: settings_pb2.UpdateConfigRequest, context: grpc.ServicerContext
    ) -> settings_pb2.GetConfigResponse:
        config = self.store.update_injection(
            request.agent_id, changes_from_pb(request.memory_injection),
            reset=request.reset_memory_injection_override,
        )
        return config_response(config.agent(request.agent_id))
