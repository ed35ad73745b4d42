# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# The doc test: the shell examples of README.md and docs/*.md run as written,
# and the documents' own checks (every shell example marked, links that
# resolve, no history, the counters glossary, the CLI summary, the manual's
# sections). docs/development.md, "The doc test", describes the markers:
#
#   <!-- doctest -->                      runs, must exit 0
#   <!-- doctest: exit=N keys=a,b json first-word=W -->   runs, with checks
#   <!-- doctest: skip (why) -->          is not run
#
# on the line directly before a ```sh, ```bash, ```shell or ```console
# fence. Examples run in order, one file at a time, in a network namespace
# whose interface is eth0 (a veth whose peer, in a second namespace, has an
# XDP_PASS program), with isnguard on PATH and a pin directory of their own.

DOC_SHELL_LANGS=" sh bash shell console "
DOC_EXAMPLE_TIMEOUT=${DOC_EXAMPLE_TIMEOUT:-60}

doc_files() {
	printf '%s\n' "$E2E_ROOT/README.md" "$E2E_ROOT"/docs/*.md
}

doc_rel() { echo "${1#"$E2E_ROOT"/}"; }

# Reads FILE's fences. Runnable examples go to OUTDIR as NNN.sh (the script)
# and NNN.spec ("LINE<tab>CHECKS"); what breaks the rules is printed as
# "FILE:LINE: why", and the status is 1 if anything did.
doc_extract() { # FILE OUTDIR
	mkdir -p "$2"
	awk -v rel="$(doc_rel "$1")" -v out="$2" -v shells="$DOC_SHELL_LANGS" '
		function err(line, msg) { printf "%s:%d: %s\n", rel, line, msg; bad = 1 }
		function strip(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
		function checks_ok(args,   n, i, w) {
			n = split(args, w, /[ \t]+/)
			for (i = 1; i <= n; i++)
				if (w[i] !~ /^(exit=[0-9]+|keys=[A-Za-z0-9_,]+|json|first-word=[^ ]+)$/)
					return 0
			return 1
		}
		{ t = $0; sub(/^[ \t]+/, "", t) }
		infence {
			if (index(t, fence) == 1 && t ~ /^(`+|~+)[ \t]*$/) {
				if (run) {
					rest = text; gsub(/:-\/sys\/fs\/bpf\/isnguard/, "", rest)
					if (rest ~ /\/sys\/fs\/bpf\/isnguard/)
						err(start, "a runnable example names the real pin directory: write \"${ISNGUARD_PIN_DIR:-/sys/fs/bpf/isnguard}\"")
					close(script)
				}
				infence = 0; next
			}
			if (!run) next
			line = $0
			for (i = 0; i < indent && substr(line, 1, 1) == " "; i++) line = substr(line, 2)
			if (lang != "console") { print line > script; text = text line "\n"; next }
			if (cont || line ~ /^\$ /) {
				if (!cont) line = substr(line, 3)
				print line > script; text = text line "\n"
				cont = line ~ /\\$/
			}
			next
		}
		t ~ /^<!--[ \t]*doctest/ {
			if (marker != "") err(mline, "a doctest marker not directly before a fence")
			marker = t; mline = NR; next
		}
		t ~ /^(```+|~~~+)/ {
			match(t, /^(`+|~+)/); fence = substr(t, 1, RLENGTH)
			info = strip(substr(t, RLENGTH + 1)); split(info, w, /[ \t{]+/); lang = w[1]
			indent = length($0) - length(t); start = NR; infence = 1; run = 0; cont = 0; text = ""
			shell = lang != "" && index(shells, " " lang " ") > 0
			if (lang == "")
				err(NR, "a fence without a language (sh, console, text, json, ...)")
			else if (!shell && marker != "")
				err(mline, "a doctest marker before a " lang " fence")
			else if (shell && marker == "")
				err(NR, "a " lang " example without a doctest marker on the line before")
			else if (shell) {
				args = marker; sub(/^<!--[ \t]*doctest:?[ \t]*/, "", args); sub(/[ \t]*-->[ \t]*$/, "", args)
				if (args ~ /^skip/) {
					if (args !~ /^skip \(.+\)$/) err(mline, "doctest: skip needs a reason: skip (why)")
				} else if (!checks_ok(args)) {
					err(mline, "doctest: unknown check in \"" args "\"")
				} else {
					run = 1; n++
					script = sprintf("%s/%03d.sh", out, n)
					printf "%d\t%s\n", NR, args > sprintf("%s/%03d.spec", out, n)
					close(sprintf("%s/%03d.spec", out, n))
					printf "" > script
				}
			}
			marker = ""; next
		}
		marker != "" && NF { err(mline, "a doctest marker not directly before a fence"); marker = "" }
		END {
			if (infence) err(start, "a fence never closed")
			if (marker != "") err(mline, "a doctest marker at the end of the file")
			exit bad
		}
	' "$1"
}

# The test's namespaces: NS_A holds eth0, its veth peer is peer0 in NS_B
# with an XDP_PASS program. topo_down (lib.sh) detaches and removes them.
doc_topo_up() {
	local suffix=${E2E_SUFFIX:-$$} ns i
	[ -f "$XDP_PASS_OBJ" ] || fail "no $XDP_PASS_OBJ (make)"
	[ -x "$ISNGUARD" ] || fail "no $ISNGUARD (make)"
	NS_A=isng-e2e-a-$suffix NS_M='' NS_B=isng-e2e-b-$suffix
	PIN_DIR=/sys/fs/bpf/isnguard-e2e-$suffix
	export ISNGUARD_PIN_DIR=$PIN_DIR
	ISNG_IF=eth0 ISNG_USED=1
	if [ -z "${E2E_WORK:-}" ]; then
		E2E_WORK=$(mktemp -d "/tmp/isng-e2e-$suffix.XXXXXX")
		E2E_WORK_OWNED=1
	fi
	for ns in "$NS_A" "$NS_B"; do
		ip netns add "$ns" || fail "ip netns add $ns"
		ip -n "$ns" link set lo up
		in_ns "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	ip link add eth0 netns "$NS_A" type veth peer name peer0 netns "$NS_B" ||
		fail "veth $NS_A/eth0 - $NS_B/peer0"
	ip -n "$NS_A" addr add 192.0.2.1/24 dev eth0
	ip -n "$NS_A" addr add 2001:db8::1/64 dev eth0 nodad
	ip -n "$NS_B" addr add 192.0.2.2/24 dev peer0
	ip -n "$NS_B" addr add 2001:db8::2/64 dev peer0 nodad
	ip -n "$NS_B" link set dev peer0 xdpdrv obj "$XDP_PASS_OBJ" sec xdp.frags ||
		fail "XDP_PASS program on $NS_B/peer0"
	ip -n "$NS_A" link set eth0 up
	ip -n "$NS_B" link set peer0 up
	for ((i = 0; i < 60; i++)); do
		ip -n "$NS_A" -o link show eth0 | grep -q 'state UP' && return 0
		sleep 0.05
	done
	fail "eth0 in $NS_A not up after 3 s"
}

# The example's script, its output and its error output, for a failure's log.
doc_show_example() { # SCRIPT
	local part
	for part in sh out err; do
		[ -s "${1%.sh}.$part" ] || continue
		log "$part:"
		sed 's/^/#   /' "${1%.sh}.$part" | head -n 40
	done
}

doc_run_example() { # REL LINE CHECKS SCRIPT SCRATCH
	local rel=$1 line=$2 checks=$3 script=$4 scratch=$5 out err rc want=0 keys='' json=0 first=''
	local c k word last
	for c in $checks; do
		case $c in
		exit=*) want=${c#exit=} ;;
		keys=*) keys=${c#keys=} ;;
		json) json=1 ;;
		first-word=*) first=${c#first-word=} ;;
		esac
	done
	out=${script%.sh}.out err=${script%.sh}.err
	# shellcheck disable=SC2016 # the example's own shell expands $@ and $1
	(cd "$scratch" && timeout "$DOC_EXAMPLE_TIMEOUT" nsenter --net="/run/netns/$NS_A" -- \
		env PATH="$(dirname "$ISNGUARD"):$PATH" ISNGUARD_PIN_DIR="$PIN_DIR" \
		bash -c 'sudo() { "$@"; }; set -e; . "$1"' doctest "$script") >"$out" 2>"$err" </dev/null
	rc=$?
	if [ "$rc" != "$want" ]; then
		doc_show_example "$script"
		fail "$rel:$line: the example exited $rc, expected $want"
	fi
	if [ -n "$first" ]; then
		word=$(awk 'NF {print $1; exit}' "$out")
		if [ "$word" != "$first" ]; then
			doc_show_example "$script"
			fail "$rel:$line: the output's first word is '$word', expected '$first'"
		fi
	fi
	if [ "$json" = 1 ]; then
		while IFS= read -r c; do
			[ -z "$c" ] && continue
			jq empty <<<"$c" 2>/dev/null && continue
			doc_show_example "$script"
			fail "$rel:$line: an output line is not JSON: $c"
		done <"$out"
	fi
	if [ -n "$keys" ]; then
		last=$(awk 'NF {l = $0} END {print l}' "$out")
		for k in ${keys//,/ }; do
			jq -e --arg k "$k" 'type == "object" and has($k)' <<<"$last" >/dev/null 2>&1 && continue
			doc_show_example "$script"
			fail "$rel:$line: the output's last line is no JSON object with the key '$k': $last"
		done
	fi
	log "ok: $rel:$line ($checks)"
}

# Runs FILE's examples in order in a fresh topology, and tears it down.
doc_run_file() { # FILE
	local file=$1 rel dir spec line checks n=0
	rel=$(doc_rel "$file")
	doc_topo_up
	dir=$E2E_WORK/doctest/$(basename "$file" .md)
	rm -rf "$dir"
	mkdir -p "$dir/scratch"
	doc_extract "$file" "$dir" || fail "$rel: its examples break the doc test's rules (above)"
	for spec in "$dir"/*.spec; do
		[ -e "$spec" ] || break
		IFS=$'\t' read -r line checks <"$spec"
		doc_run_example "$rel" "$line" "$checks" "${spec%.spec}.sh" "$dir/scratch"
		n=$((n + 1))
	done
	log "ok: $rel: $n examples ran"
	topo_down
}

test_doc_examples_readme() {
	require_cmd jq nsenter
	doc_run_file "$E2E_ROOT/README.md"
}

# Each file of docs/ in its own topology, so one's state never meets another's.
test_doc_examples_docs() {
	local file
	require_cmd jq nsenter
	for file in "$E2E_ROOT"/docs/*.md; do
		doc_run_file "$file"
	done
}

test_doc_every_shell_fence_is_marked() {
	local file bad=0
	while read -r file; do
		doc_extract "$file" "$E2E_WORK/extract/$(basename "$file" .md)" || bad=1
	done < <(doc_files)
	[ $bad = 0 ] || fail "examples without a marker, or markers out of place (above)"
	log "ok: every shell fence of README.md and docs/ carries a doctest marker"
}

# The headings of an .md file as GitHub anchors, one per line.
doc_anchors() { # FILE
	awk '
		/^[ \t]*(```|~~~)/ { fence = !fence; next }
		fence || !/^#+ / { next }
		{
			h = tolower($0); sub(/^#+ +/, "", h)
			gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
			print h
		}
	' "$1"
}

test_doc_relative_links_resolve() {
	local file rel dir lineno target path anchor dest bad=0
	while read -r file; do
		rel=$(doc_rel "$file") dir=$(dirname "$file")
		while IFS=$'\t' read -r lineno target; do
			case $target in
			http://* | https://* | mailto:*) continue ;;
			esac
			path=${target%%#*} anchor=
			[[ $target == *"#"* ]] && anchor=${target#*#}
			dest=$file
			[ -n "$path" ] && dest=$dir/$path
			if [ ! -e "$dest" ]; then
				log "$rel:$lineno: $target: no such file"
				bad=1
			elif [ -n "$anchor" ] && [[ $dest == *.md ]] && ! doc_anchors "$dest" | grep -qxF -- "$anchor"; then
				log "$rel:$lineno: $target: no heading with that anchor"
				bad=1
			fi
		done < <(awk '
			/^[ \t]*(```|~~~)/ { fence = !fence; next }
			fence { next }
			{
				s = $0
				while (match(s, /\]\([^) ]+\)/)) {
					print NR "\t" substr(s, RSTART + 2, RLENGTH - 3)
					s = substr(s, RSTART + RLENGTH)
				}
			}
		' "$file")
	done < <(doc_files)
	[ $bad = 0 ] || fail "relative links that do not resolve (above)"
	log "ok: every relative link of README.md and docs/ resolves"
}

# The lines of an .md file a reader reads as prose or commands, as
# "LINE: text": output samples (fences other than shell ones) are left out,
# since a timestamp there is output, not history.
doc_prose() { # FILE
	awk -v shells="$DOC_SHELL_LANGS" '
		/^[ \t]*(```|~~~)/ {
			if (!fence) {
				t = $0; sub(/^[ \t]*(`+|~+)/, "", t); split(t, w, /[ \t{]+/)
				output = index(shells, " " w[1] " ") == 0
			}
			fence = !fence; next
		}
		fence && output { next }
		{ print NR ": " $0 }
	' "$1"
}

# History stays in git: no issue numbers, "this machine", branches, dates,
# earlier runs, or commit hashes (7 to 12 hex digits in parentheses, holding
# a letter and a digit).
DOC_HISTORY_WORDS='issues? #?[0-9]|this machine|this branch|(^|[^0-9])(19|20)[0-9]{2}-[01][0-9]|earlier runs?|previous runs?|first version of|before the fix'
test_doc_speaks_of_the_present() {
	local file rel line found bad=0
	while read -r file; do
		rel=$(doc_rel "$file")
		found=$(doc_prose "$file" | grep -iE -- "$DOC_HISTORY_WORDS|\([0-9a-f]{7,12}\)" |
			while IFS= read -r line; do
				if grep -qiE -- "$DOC_HISTORY_WORDS" <<<"$line" ||
					grep -oE '\([0-9a-f]{7,12}\)' <<<"$line" | grep '[a-f]' | grep -q '[0-9]'; then
					echo "$line"
				fi
			done)
		[ -z "$found" ] && continue
		while IFS= read -r line; do log "$rel:$line"; done <<<"$found"
		bad=1
	done < <(doc_files)
	[ $bad = 0 ] || fail "lines that speak of the past (above): history stays in git"
	log "ok: README.md and docs/ speak of the present"
}

test_doc_counters_glossary_lists_every_counter() {
	local name missing=
	for name in $(grep -oE 'X\(STAT_[A-Z0-9_]+,[[:space:]]*"[a-z0-9_]+"\)' "$E2E_ROOT/include/isnguard.h" |
		sed -E 's/.*"([a-z0-9_]+)".*/\1/'); do
		grep -qF "\`$name\`" "$E2E_ROOT/docs/operations.md" || missing+=" $name"
	done
	[ -z "$missing" ] || fail "docs/operations.md's counters glossary lacks:$missing"
	log "ok: docs/operations.md names every counter of include/isnguard.h"
}

# The README's CLI summary: a row per command, naming each of its options.
test_doc_cli_summary_names_every_option() {
	local summary cmd row opt missing=
	summary=$(awk '/^## / { on = ($0 == "## CLI summary") } on' "$E2E_ROOT/README.md")
	[ -n "$summary" ] || fail "README.md has no '## CLI summary' section"
	for cmd in $("$ISNGUARD" --help | awk '/^  [a-z]/ {print $1}'); do
		grep -qF "\`$cmd" <<<"$summary" || { missing+=" $cmd"; continue; }
		row=$(grep -F "| \`$cmd" <<<"$summary" || true)
		for opt in $("$ISNGUARD" "$cmd" --help | awk '/^  +(-[a-zA-Z], )?--[a-z]/ {
				for (i = 1; i <= NF; i++) if ($i ~ /^--/) { print $i; break } }'); do
			[ "$opt" = --help ] && continue
			grep -qF -- "$opt" <<<"$row" || missing+=" $cmd$opt"
		done
	done
	[ -z "$missing" ] || fail "README.md's CLI summary lacks:$missing"
	log "ok: README.md's CLI summary names every command and option of --help"
}

test_doc_man_page_has_every_section() {
	local man=$E2E_WORK/isnguard.8 section cmd count rows var missing='' rendered
	"$E2E_ROOT/scripts/gen-man.sh" "$ISNGUARD" >"$man" || fail "scripts/gen-man.sh failed"
	for section in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" FILES ENVIRONMENT \
		EXAMPLES "SEE ALSO"; do
		grep -qxF ".SH $section" "$man" || missing+=" [$section]"
	done
	for cmd in $("$ISNGUARD" --help | awk '/^  [a-z]/ && $1 != "help" {print $1}'); do
		grep -qxF ".SS $cmd" "$man" || { missing+=" [.SS $cmd]"; continue; }
		# One .TP entry per option row of the command's --help: none run together.
		rows=$("$ISNGUARD" "$cmd" --help | grep -cE '^  +(-[a-zA-Z], )?--[a-z]' || true)
		count=$(awk -v c=".SS $cmd" '$0 == c { on = 1; next } /^\.S[SH] / { on = 0 }
			on && $0 == ".TP" { n++ } END { print n + 0 }' "$man")
		[ "$count" = "$rows" ] || missing+=" [$cmd: $count option entries for $rows options]"
	done
	for var in $(grep -ohE 'getenv\("[A-Z_]+"\)' "$E2E_ROOT"/user/*.c | sed -E 's/getenv\("(.*)"\)/\1/' | sort -u); do
		awk '/^\.SH ENVIRONMENT/ { on = 1; next } /^\.SH / { on = 0 } on' "$man" |
			grep -qxF ".B $var" || missing+=" [ENVIRONMENT $var]"
	done
	[ -z "$missing" ] || fail "isnguard(8) lacks:$missing"
	if command -v man >/dev/null; then
		rendered=$(MANWIDTH=80 man -l "$man" 2>/dev/null | col -b)
		for section in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" FILES ENVIRONMENT \
			EXAMPLES "SEE ALSO"; do
			grep -qx "$section" <<<"$rendered" || missing+=" [$section rendered]"
		done
		[ -z "$missing" ] || fail "man -l isnguard.8 lacks:$missing"
		log "ok: man -l renders every section"
	else
		log "NOTE: no man here: the sections were checked in the source only"
	fi
	log "ok: isnguard(8) has every section, every command, one entry per option"
}
