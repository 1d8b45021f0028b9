"""The gRPC edge: servicers, protobuf conversion, status mapping, server assembly."""
