module github.com/memsidecar/memsidecar/clients/go

go 1.19

// Minimum versions. Elsewhere `go get` resolves these (or newer) from the module proxy;
// clients/go/build.sh builds offline against Debian's source tree instead. Kept by hand:
// every module the build loads is listed, because grpc 1.33's go.mod predates graph pruning.
require (
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)

require (
	github.com/golang/protobuf v1.5.2 // indirect
	golang.org/x/net v0.7.0 // indirect
	golang.org/x/sys v0.5.0 // indirect
	golang.org/x/text v0.7.0 // indirect
	google.golang.org/genproto v0.0.0-20200526211855-cb27e3aa2013 // indirect
)
