#!/usr/bin/env bash
# test.sh is what `make test` runs: go vet, then the tests with the race
# detector against a throwaway PostgreSQL when one can be started (the
# PostgreSQL tests skip otherwise). With GPUCAL_TEST_POSTGRES already set it
# uses that server and starts nothing.
#
# Arguments go to `go test`. Package patterns among them (./store/...)
# replace the default ./..., for go vet too:
#   scripts/test.sh ./store/... -run TestUpdate -v
set -euo pipefail
cd "$(dirname "$0")/.."
# go-nvml's cgo calls into nvml.h functions NVIDIA marked deprecated: keep
# the compiler from printing a warning for each one.
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}"

pkgs=() flags=()
for a in "$@"; do
	case $a in
	./* | ../* | */...) pkgs+=("$a") ;;
	*) flags+=("$a") ;;
	esac
done
[[ ${#pkgs[@]} -gt 0 ]] || pkgs=(./...)

# The web calendar's browser tests need its built assets: build them when
# npm is here (without it they skip, unless GPUCAL_BROWSER_TESTS=require).
if command -v npm >/dev/null; then
	echo "+ make ui"
	make --no-print-directory ui
else
	echo "npm not found: the web calendar's assets are not built; its browser tests will skip" >&2
fi

echo "+ go vet ${pkgs[*]}"
go vet "${pkgs[@]}"
# Only the node agent's NVML reader needs cgo: everything must still build without it.
echo "+ CGO_ENABLED=0 go build ./... && CGO_ENABLED=0 go test ./agent/gpu/nvmlreader"
CGO_ENABLED=0 go build ./...
CGO_ENABLED=0 go test -count=1 ./agent/gpu/nvmlreader

# pg_bin prints the directory holding initdb and pg_ctl, if any.
pg_bin() {
	local d
	if command -v pg_config >/dev/null && d=$(pg_config --bindir 2>/dev/null) && [[ -x $d/initdb && -x $d/pg_ctl ]]; then
		echo "$d"
		return
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
		if [[ -x $d/initdb && -x $d/pg_ctl ]]; then
			echo "$d"
			return
		fi
	done
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(command -v initdb)"
		return
	fi
	return 1
}

# port_free reports whether nothing listens on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pg_dir=""
stop_pg() {
	if [[ -n $pg_dir ]]; then
		as_pg "$bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
		rm -rf "$pg_dir"
	fi
}

# start_pg starts a throwaway cluster and exports GPUCAL_TEST_POSTGRES.
start_pg() {
	bin=$(pg_bin) || { echo "no initdb/pg_ctl found"; return 1; }
	if [[ $(id -u) == 0 ]]; then
		# initdb and postgres refuse to run as root.
		id postgres >/dev/null 2>&1 || { echo "running as root and there is no postgres user"; return 1; }
		as_pg() { runuser -u postgres -- "$@"; }
	else
		as_pg() { "$@"; }
	fi
	pg_dir=$(mktemp -d /tmp/gpucal-pg.XXXXXX)
	trap stop_pg EXIT
	[[ $(id -u) == 0 ]] && chown postgres "$pg_dir"
	as_pg "$bin/initdb" -D "$pg_dir/data" -A trust -U postgres -E UTF8 --locale=C >"$pg_dir/initdb.log" 2>&1 ||
		{ cat "$pg_dir/initdb.log"; return 1; }
	local port
	for port in $(seq 55432 55482); do
		port_free "$port" || continue
		if as_pg "$bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/postgres.log" -w -t 60 start \
			-o "-p $port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" >/dev/null; then
			export GPUCAL_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
			echo "+ $("$bin/pg_ctl" --version) on port $port ($pg_dir)"
			return 0
		fi
		tail -5 "$pg_dir/postgres.log" || true
	done
	return 1
}

if [[ -z ${GPUCAL_TEST_POSTGRES:-} ]]; then
	if ! start_pg; then
		echo "WARNING: could not start a throwaway PostgreSQL; the PostgreSQL tests will be skipped" >&2
	fi
fi

# The agent's drain tests write the margin between a drained job's last
# process exiting and the window start of every run here; it is printed
# after the tests (the issue asks to see it, and it must be ≥ 0).
export GPUCAL_DRAIN_REPORT
GPUCAL_DRAIN_REPORT=$(mktemp /tmp/gpucal-drain.XXXXXX)
# The browser tests write the calendar's first-render time here
# (docs/performance.md), and their screenshots under test-artifacts/
# (go test -artifacts), which CI keeps.
export GPUCAL_PERF_REPORT
GPUCAL_PERF_REPORT=$(mktemp /tmp/gpucal-perf.XXXXXX)
artifacts=${GPUCAL_ARTIFACTS:-test-artifacts}
rm -rf "$artifacts" && mkdir -p "$artifacts"

echo "+ go test -race -count=1 -artifacts -outputdir $artifacts ${pkgs[*]} ${flags[*]}"
status=0
go test -race -count=1 -artifacts -outputdir "$artifacts" "${pkgs[@]}" "${flags[@]}" || status=$?
if [[ -s $GPUCAL_DRAIN_REPORT ]]; then
	echo "+ drain margins measured by the end-to-end tests:"
	sed 's/^/  /' "$GPUCAL_DRAIN_REPORT"
fi
if [[ -s $GPUCAL_PERF_REPORT ]]; then
	echo "+ the web calendar's first render, measured in chromium (under -race, with the other tests running):"
	sed 's/^/  /' "$GPUCAL_PERF_REPORT"
fi
if compgen -G "$artifacts/_artifacts/*/*.png" >/dev/null; then
	echo "+ screenshots: $(find "$artifacts" -name '*.png' | wc -l) PNG files under $artifacts/"
fi
rm -f "$GPUCAL_DRAIN_REPORT" "$GPUCAL_PERF_REPORT"
exit "$status"
