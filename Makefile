# Kule's build. `make demo` runs the main job on a sample folder; `make test`
# runs the lint, then every test (as root on CI, so the sandbox and reflink
# tests run too); `make cover` prints each package's coverage and holds the
# packages that guard the folder to their floor.
GO      ?= go
BIN     ?= bin/kule
# The longest a single package's tests may run (go test's -timeout holds per
# test binary): cmd/kule and contrib/packaging, the slowest, take 10–25 minutes under -race on
# two cores.
TIMEOUT ?= 40m
# staticcheck at a pinned version, fetched and built by the go command.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Each Go module of the tree: the root, and those below it that have a go.mod
# of their own (contrib/samples holds a sample folder, not Kule's code).
MODULES = . $(patsubst %/go.mod,%,$(wildcard sdk/go.mod contrib/example-differ/go.mod contrib/example-previewer/go.mod contrib/example-transport/go.mod))
# What make lint runs gofmt over: every Go file git knows or would add and
# that is there, but testdata, which holds inputs kept as they are (some do
# not even parse).
FMT_FILES = $$(git ls-files -co --exclude-standard '*.go' | grep -v '/testdata/' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done)
# What make cover measures (a subset, such as the guarded packages, runs faster).
COVER_PKGS ?= ./...
# The sandbox's helper is C run before the Go runtime (kernel/internal/sandbox/pid1_linux.c),
# linked statically so that no loader runs before it either.
HELPER_FLAGS = -tags netgo,osusergo -ldflags '-linkmode=external -extldflags=-static'
# What kule --version says: the nearest tag (or the commit) and the commit,
# linked into the binary; a plain go build reads the commit from the VCS
# stamp instead.
VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' 2>/dev/null) && echo $${v\#v} || echo 0.0.0+git$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown))
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_FLAGS = -ldflags '-X main.version=$(VERSION) -X main.commit=$(COMMIT)'

.PHONY: build install desktop install-desktop test test-overlay test-short lint cover demo bench proto vet fmt clean screenshots dist

# kule-plugins serves the built-in plugins; it goes beside kule.
build:
	$(GO) build $(VERSION_FLAGS) -o $(BIN) ./cmd/kule
	$(GO) build -o $(dir $(BIN))kule-plugins ./cmd/kule-plugins
	CGO_ENABLED=1 $(GO) build $(HELPER_FLAGS) -o $(dir $(BIN))kule-sandbox ./cmd/kule-sandbox

install:
	$(GO) install $(VERSION_FLAGS) ./cmd/kule
	$(GO) install ./cmd/kule-plugins
	CGO_ENABLED=1 $(GO) install $(HELPER_FLAGS) ./cmd/kule-sandbox

# The desktop window links WebKitGTK (apt install libwebkit2gtk-4.1-dev).
desktop:
	CGO_ENABLED=1 $(GO) build -ldflags '-X main.version=$(VERSION)' -o $(dir $(BIN))kule-desktop ./cmd/kule-desktop
install-desktop:
	CGO_ENABLED=1 $(GO) install -ldflags '-X main.version=$(VERSION)' ./cmd/kule-desktop

test: lint
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	for m in $(MODULES); do (cd $$m && $(GO) test -race -timeout $(TIMEOUT) ./...) || exit 1; done
	$(MAKE) test-overlay

# The suites that run against the copy and reflink backends, again on the
# overlay backend: the engine (.git by meaning, merges, the path guards),
# every sandbox test with the escapes over an overlay copy, and the CLI's
# crash-point, undo, git and link suites. Without -race: the race runs
# above cover the same code.
test-overlay:
	KULE_TEST_BACKEND=overlay $(GO) test -count=1 -timeout $(TIMEOUT) ./kernel/ ./kernel/internal/sandbox/
	KULE_BACKEND=overlay $(GO) test -count=1 -timeout $(TIMEOUT) -run 'Forced|Crash|Undo|Rollback|Commit|Git|Merge|Escape|Link' ./cmd/kule/

# gofmt over FMT_FILES, then staticcheck over each module. internal/lintcheck
# runs this target on planted violations.
lint:
	@files="$(FMT_FILES)"; \
	if [ -z "$$files" ]; then echo "lint: no Go files to check"; exit 1; fi; \
	out=$$(gofmt -l $$files) || exit 1; \
	if [ -n "$$out" ]; then \
		echo "lint: these files are not gofmt-formatted (nothing was changed; run make fmt):"; \
		echo "$$out"; exit 1; \
	fi
	@for m in $(MODULES); do \
		echo "staticcheck $$m"; \
		(cd $$m && $(STATICCHECK) ./...) || exit 1; \
	done

# Coverage per package, one line each, sorted; fails when a package that
# guards the folder is below its floor (internal/coverfloor).
cover:
	@mkdir -p bin
	@echo "go test -cover $(COVER_PKGS) > bin/cover.out"
	@$(GO) test -timeout $(TIMEOUT) -cover $(COVER_PKGS) > bin/cover.out 2>&1; st=$$?; \
	$(GO) run ./internal/coverfloor < bin/cover.out || exit 1; \
	if [ $$st -ne 0 ]; then echo "cover: go test failed; its output is in bin/cover.out"; exit $$st; fi

test-short:
	$(GO) test -short ./...

demo: build
	KULE=$(CURDIR)/$(BIN) bash contrib/demo/demo.sh

bench: build
	KULE=$(CURDIR)/$(BIN) bash contrib/bench/run-all.sh

# screenshots draws each panel of the app at 1000x700 and 1920x1080 in a real Chromium and
# writes them to docs/screenshots (docs/app.md shows them).
screenshots:
	CI=1 $(GO) test -count=1 -run '^TestAppScreenshots$$' ./cmd/internal/daemon/ -screenshots=$(CURDIR)/docs/screenshots

proto:
	bash sdk/proto/generate.sh

vet:
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

fmt:
	gofmt -w $(FMT_FILES)

# Release files for linux/amd64 and linux/arm64 in DIST: .deb, .rpm, a
# tar.gz of the command, SHA256SUMS; reproducible (contrib/packaging/dist.sh).
DIST ?= dist
dist:
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) DIST=$(DIST) bash contrib/packaging/dist.sh

clean:
	rm -rf bin dist
