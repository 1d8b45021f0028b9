package msclient

import (
	"context"
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
)

// reconnect retries a lost connection quickly (at most 2 s apart), so that WaitReady and
// calls after a sidecar restart do not wait out grpc-go's default backoff of up to 2 min.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2,
		MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// MaxMessageBytes is the largest reply a call accepts: the sidecar's default
// [server] max_message_bytes, since a reply may be as large as the request the sidecar took (a
// PruneHistory or RenderTranscript of a long history), past grpc-go's 4 MiB default.
const MaxMessageBytes = 16 * 1024 * 1024

// DefaultTimeout is the deadline applied to a call whose context has none.
const DefaultTimeout = 5 * time.Second

// DefaultDialTimeout bounds how long Dial waits for the connection.
const DefaultDialTimeout = 5 * time.Second

// Option configures Dial.
type Option func(*options)

type options struct {
	agent       string
	token       string
	tls         *tls.Config
	timeout     time.Duration
	dialTimeout time.Duration
}

func defaults() options {
	return options{timeout: DefaultTimeout, dialTimeout: DefaultDialTimeout}
}

// WithAgent sets the agent id sent by Get, Forget, AddEdge, RemoveEdge and ResetChannel:
// the caller's scope (its own memories and channels, plus shared memories). Requests built by
// the caller carry their own AgentId.
func WithAgent(agent string) Option { return func(o *options) { o.agent = agent } }

// WithToken sends "authorization: Bearer <token>" with every call.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithTLS connects over TLS with the given configuration (nil fields take Go's defaults).
// Without it the connection is plaintext, as for a sidecar on localhost or a Unix socket.
func WithTLS(config *tls.Config) Option { return func(o *options) { o.tls = config } }

// WithTimeout sets the default per-call deadline.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithDialTimeout sets how long Dial waits for the connection; 0 = Dial returns at once and
// the connection is made in the background (then WaitReady waits for a starting sidecar).
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

func (o options) dialOptions() []grpc.DialOption {
	out := []grpc.DialOption{grpc.WithConnectParams(reconnect),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes))}
	if o.dialTimeout > 0 {
		out = append(out, grpc.WithBlock())
	}
	if o.tls != nil {
		out = append(out, grpc.WithTransportCredentials(credentials.NewTLS(o.tls)))
	} else {
		// WithInsecure exists in grpc-go 1.33 and in current releases (deprecated there in
		// favour of insecure.NewCredentials, which 1.33 lacks).
		out = append(out, grpc.WithInsecure())
	}
	if o.token != "" {
		out = append(out, grpc.WithPerRPCCredentials(bearer{token: o.token, secure: o.tls != nil}))
	}
	return out
}

// bearer is a token sent as call metadata.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false on a plaintext connection so that the token also
// reaches a sidecar on localhost or a Unix socket.
func (b bearer) RequireTransportSecurity() bool { return b.secure }
