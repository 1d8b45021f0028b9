package msclient

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Error is a failed call: the gRPC status plus the sidecar's machine-readable trailers.
type Error struct {
	Code    codes.Code
	Message string
	Reason  string // memsidecar-reason trailer, e.g. "EMPTY_CONTENT"
	Field   string // memsidecar-field trailer, e.g. "memory.content"
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
	if e.Reason != "" || e.Field != "" {
		msg += fmt.Sprintf(" (reason=%s field=%s)", e.Reason, e.Field)
	}
	return msg
}

func wrap(err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &Error{Code: st.Code(), Message: st.Message(),
		Reason: first(trailer, "memsidecar-reason"), Field: first(trailer, "memsidecar-field")}
}

func first(md metadata.MD, key string) string {
	if values := md.Get(key); len(values) > 0 {
		return values[0]
	}
	return ""
}

// CodeOf returns the gRPC code of err (codes.OK for nil, codes.Unknown for foreign errors).
func CodeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return status.Code(err)
}

// IsUnimplemented reports whether the server does not implement the called RPC yet.
func IsUnimplemented(err error) bool { return CodeOf(err) == codes.Unimplemented }
