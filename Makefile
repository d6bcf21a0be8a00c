# timeagent — build, demo, test, bench.
GO          ?= go
BIN         := bin/timeagent
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
# The release is main.version's default in cmd/timeagent/app.go; the commit is build metadata.
RELEASE     := $(shell sed -n 's/^var version = "\(.*\)"$$/\1/p' cmd/timeagent/app.go)
VERSION     ?= $(RELEASE)+$(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
# Packages whose tests fit the time budget under the race detector (the
# real-agent tests have their own target, test-agents).
RACE_PKGS   := ./tasks/... ./journal/... ./cow/... ./session/... ./recovery/... ./actions/... \
	$(shell $(GO) list ./internal/... | grep -v -e /internal/modeltest -e /internal/crashtest -e /internal/agenttest)

.PHONY: build demo test test-deps fuse-uring lint fmt vet staticcheck unit race race-fs model test-agents cross wine test-user test-load bench soak clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/timeagent

demo: build
	./scripts/demo.sh $(BIN)

test: test-deps fuse-uring fmt vet staticcheck race race-fs unit model test-agents cross wine test-user test-load

# Tools the tests run for real: git, patch, sqlite3 (inside FUSE sessions),
# tmux (the menu and the hotkey through a real terminal).
test-deps:
	@command -v git >/dev/null && command -v patch >/dev/null && command -v sqlite3 >/dev/null && command -v tmux >/dev/null || \
		( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git patch sqlite3 tmux >/dev/null )

# FUSE over io_uring (Linux 6.14+): the overlay uses it wherever the fuse
# module allows it, and the tests cover it beside /dev/fuse reads. As root,
# allow it; elsewhere the io_uring half of those tests says why it did not run.
fuse-uring:
	@p=/sys/module/fuse/parameters/enable_uring; \
		if [ -w $$p ] && [ "$$(cat $$p)" != Y ]; then echo Y > $$p && echo "fuse: enabled io_uring ($$p)"; fi

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

# Unit and integration tests under the race detector (the CLI package runs
# without it below: it drives real child processes; the crash suite runs in
# test-load beside CPU hogs and in test-user as a normal user). The timeout
# is per package: journal and cow take 1-2 minutes idle, 10 beside CPU hogs.
race:
	$(GO) test -race -count=1 -timeout 25m $(RACE_PKGS)

# The overlay under the race detector: its own target, as it takes longer
# than the others together (26 min on 2 loaded cores; 5 min without -race).
race-fs: fuse-uring
	$(GO) test -race -count=1 -timeout 40m ./fs/...

unit:
	$(GO) test -count=1 -timeout 30m ./cmd/...

# Whole user histories against the model (internal/modeltest): 5 workers ×
# 100 histories. `make soak` runs ten times as many.
model:
	$(GO) test -count=1 -timeout 25m ./internal/modeltest/

# The real agent CLIs (Claude Code, Codex, Gemini CLI, from npm into
# ~/.cache/timeagent-agents) against a scripted fake model on 127.0.0.1
# (internal/agenttest); skipped with the reason when npm is unreachable.
# make test runs it (about 4 minutes idle).
test-agents:
	$(GO) test -count=1 -timeout 40m -v ./internal/agenttest/

soak:
	TIMEAGENT_MODEL_WORKERS=10 $(GO) test -count=1 -timeout 6h ./internal/modeltest/ -rapid.checks=500

# The other platforms: code, tests (vet type-checks them) and staticcheck.
cross: $(STATICCHECK)
	GOOS=windows $(GO) build ./...
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(STATICCHECK) ./...
	GOOS=darwin $(STATICCHECK) ./...

# The unprivileged lane: the CLI scenarios and the crash suite as a normal
# user created for it, through fuse3's fusermount3 (scripts/test-user.sh).
test-user:
	@command -v fusermount3 >/dev/null || \
		( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 >/dev/null )
	GO=$(GO) ./scripts/test-user.sh

# The crash suite with two CPU hogs beside it (scripts/test-load.sh).
test-load:
	GO=$(GO) ./scripts/test-load.sh

# The Windows build's control channel (a named pipe) under Debian's wine 8.
wine:
	@command -v x86_64-w64-mingw32-gcc >/dev/null && { command -v wine64 >/dev/null || [ -x /usr/lib/wine/wine64 ]; } || \
		( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine64 gcc-mingw-w64-x86-64-win32 >/dev/null )
	GO=$(GO) ./scripts/wine-test.sh

# The latency of reads of unrelated files while a 1 GiB file is copied up
# (read-max-ms; target 50 ms) is a Go benchmark of the overlay.
bench: build fuse-uring
	./scripts/bench.sh
	$(GO) test -run '^$$' -bench BenchmarkCopyUpStall -benchtime 1x -timeout 15m ./fs/
	$(GO) test -run '^$$' -bench '10k' ./internal/menu/
	$(GO) test -run '^$$' -bench History10k -timeout 15m ./cmd/timeagent/

clean:
	rm -rf bin
