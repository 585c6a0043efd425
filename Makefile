# gpucal — the two commands that matter: `make run` and `make test`.

GO       ?= go
BIN      := bin/gpucal
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
# go-nvml's cgo calls nvml.h functions NVIDIA marked deprecated; quiet the warnings.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: build build-static ui run test bench lint fuzz clean check-deploy

UI := web/ui

## build: the web calendar's assets, then the gpucal binary (server, demo, client and node
## agent in one, the assets embedded) into bin/; cgo is on because the agent reads GPUs
## through NVML (needs a C compiler, not the driver)
build: ui
	CGO_ENABLED=1 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gpucal

## build-static: one static binary without cgo (server, demo, client; its agent cannot read GPUs)
build-static: ui
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gpucal

## ui: the web calendar's assets (npm ci, then copy @event-calendar/build into web/ui/dist,
## which the binary embeds); needs Node.js 20+ and npm
ui: $(UI)/dist/event-calendar.min.js

$(UI)/node_modules/.package-lock.json: $(UI)/package.json $(UI)/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 20+ and npm to build the web calendar (a plain 'go build ./cmd/gpucal' makes a gpucal whose page says how)"; exit 1; }
	cd $(UI) && npm ci --no-audit --no-fund

$(UI)/dist/event-calendar.min.js: $(UI)/node_modules/.package-lock.json $(UI)/build.mjs
	cd $(UI) && npm run build

## run: the demo — a server on embedded SQLite with a demo cluster and bookings
run: build
	./$(BIN) demo $(ARGS)

## test: go vet, then every test with the race detector, PostgreSQL included
test:
	bash scripts/test.sh

## check-deploy: the deploy kit with the tools themselves: promtool check rules, test rules and
## check config (Debian: apt-get install prometheus), helm lint where helm is installed;
## `make test` runs the same checks and more (package deploy, TestPrometheusScrapes)
check-deploy:
	promtool check rules deploy/prometheus/*.yml
	cd deploy/prometheus && promtool test rules tests/*.yml
	promtool check config deploy/prometheus/scrape/prometheus.yml
	promtool check config deploy/compose/prometheus.yml
	@if command -v helm >/dev/null; then helm lint --strict deploy/helm/gpucal -f deploy/helm/gpucal/ci/lint-values.yaml; \
	else echo "helm is not installed: the chart is not linted (see deploy/README.md)"; fi

## bench: the benchmarks, with memory statistics
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseDuration$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzParseModel$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzParseReservationID$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzCheckpointSignal$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzHeartbeat$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzParseQuietHours$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzParseVia$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzCleanTail$$' -fuzztime $(FUZZTIME) ./core
	$(GO) test -run '^$$' -fuzz '^FuzzParseWhen$$' -fuzztime $(FUZZTIME) ./cmd/gpucal
	$(GO) test -run '^$$' -fuzz '^FuzzParseProgress$$' -fuzztime $(FUZZTIME) ./cmd/gpucal
	$(GO) test -run '^$$' -fuzz '^FuzzParseWeekTime$$' -fuzztime $(FUZZTIME) ./cmd/gpucal
	$(GO) test -run '^$$' -fuzz '^FuzzParseGroups$$' -fuzztime $(FUZZTIME) ./notify/robots
	$(GO) test -run '^$$' -fuzz '^FuzzMask$$' -fuzztime $(FUZZTIME) ./notify/robots
	$(GO) test -run '^$$' -fuzz '^FuzzParseURL$$' -fuzztime $(FUZZTIME) ./notify/email
	$(GO) test -run '^$$' -fuzz '^FuzzLoadPhilly$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzLoadSWF$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzLoadHelios$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzParseLine$$' -fuzztime $(FUZZTIME) ./agent/progress
	$(GO) test -run '^$$' -fuzz '^FuzzParser$$' -fuzztime $(FUZZTIME) ./agent/progress
	$(GO) test -run '^$$' -fuzz '^FuzzParseStat$$' -fuzztime $(FUZZTIME) ./agent/run
	$(GO) test -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZTIME) ./agent/progress
	$(GO) test -run '^$$' -fuzz '^FuzzParseFake$$' -fuzztime $(FUZZTIME) ./agent/gpu
	$(GO) test -run '^$$' -fuzz '^FuzzParseStatusUID$$' -fuzztime $(FUZZTIME) ./agent/gpu
	$(GO) test -run '^$$' -fuzz '^FuzzLoadMiniBatch$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./bot

	$(GO) test -run '^$$' -fuzz '^FuzzBookForm$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzPickLang$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzIsWebToken$$' -fuzztime $(FUZZTIME) ./core

clean:
	rm -rf bin test-artifacts $(UI)/node_modules $(UI)/dist/*.js $(UI)/dist/*.css $(UI)/dist/VERSION
