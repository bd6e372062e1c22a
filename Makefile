# Kule's build. `make demo` runs the main job on a sample folder; `make test`
# runs every test (as root on CI, so the sandbox and reflink tests run too).
GO      ?= go
BIN     ?= bin/kule
TIMEOUT ?= 40m
# The sandbox's helper is C run before the Go runtime (kernel/internal/sandbox/pid1_linux.c),
# linked statically so that no loader runs before it either.
HELPER_FLAGS = -tags netgo,osusergo -ldflags '-linkmode=external -extldflags=-static'

.PHONY: build install test test-short demo bench proto vet fmt clean

build:
	$(GO) build -o $(BIN) ./cmd/kule
	CGO_ENABLED=1 $(GO) build $(HELPER_FLAGS) -o $(dir $(BIN))kule-sandbox ./cmd/kule-sandbox

install:
	$(GO) install ./cmd/kule
	CGO_ENABLED=1 $(GO) install $(HELPER_FLAGS) ./cmd/kule-sandbox

test:
	$(GO) vet ./...
	$(GO) test -race -timeout $(TIMEOUT) ./...

test-short:
	$(GO) test -short ./...

demo: build
	KULE=$(CURDIR)/$(BIN) bash contrib/demo/demo.sh

bench: build
	KULE=$(CURDIR)/$(BIN) bash contrib/bench/run-all.sh

proto:
	bash sdk/proto/generate.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
