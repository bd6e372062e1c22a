#!/usr/bin/env bash
# Regenerates the Go code of Kule's plugin protocols (make proto).
# Needs protoc (Debian: protobuf-compiler) and, on PATH, protoc-gen-go and
# protoc-gen-go-grpc at the versions below.
set -euo pipefail
cd "$(dirname "$0")"

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.0

export PATH="$PATH:$(go env GOPATH)/bin"
if ! command -v protoc-gen-go >/dev/null; then
	go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
fi
if ! command -v protoc-gen-go-grpc >/dev/null; then
	go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
fi

for f in differ/v1/differ.proto previewer/v1/previewer.proto transport/v1/transport.proto extension/v1/extension.proto; do
	protoc -I . \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		"$f"
done
