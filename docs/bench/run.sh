#!/bin/sh
# Whole-process performance figures, each with a baseline measured in the
# same run (docs/PERFORMANCE.md records the results).
#
#   docs/bench/run.sh [WORKDIR] [STEP...]     from the repository root
#
# STEP is any of gen rss frames export stored pairs (default: all but
# pairs). Generated data (about 1.7 GB) and archives go to WORKDIR (default
# /tmp/replay-bench). Needs /usr/bin/time (GNU), zstd and xz. The machine is
# shared: every command of the first five steps runs under nice -n 19, and
# times are medians of several runs. pairs gives the table's ingest and
# export ratios: PAIRS (default 5) alternating pairs of a command and its
# baseline, both at normal priority, and the median of the pairs' ratios,
# for each of PAIRS_OF (default "big games export").
#
# kinds (not in the default) reports, per kind of data, the stored ratio
# and the ingest and export times on data the archive was not tuned on:
# internal/cmd/simgen's kinds (an independent DDNet server simulation,
# `simgen -list`) and the real corpus's teehistorian files as kind corpus.
# KINDS picks some (default all), KPAIRS (default 3) alternating pairs of
# ingest and `cat | zstd -3 -T1`, KXZPAIRS (default 1) of those pairs also
# run per-file xz -9e; KSEED (default 1) seeds the data (W/kinds/KIND).
set -eu
W=${1:-/tmp/replay-bench}
[ $# -gt 0 ] && shift
STEPS=${*:-gen rss frames export stored}
mkdir -p "$W"
go build -o "$W/archivectl" ./cmd/archivectl
go build -o "$W/thgen" ./internal/cmd/thgen
A="nice -n 19 $W/archivectl"
ID=1dd452f5 # the generator's game id (seed 1)

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
kib() { grep 'Maximum resident' "$1" | awk '{print $6}'; }
secs() { grep 'Elapsed' "$1" | awk '{print $8}'; }

if has gen; then
	# One hour of DDNet play, one 1 GB file (67 hours), a day of 24 one-hour
	# files, 200 five-minute games: seeds differ, so every file is unique.
	[ -f "$W/hour.th" ] || "$W/thgen" -dur 1h -o "$W/hour.th"
	[ -f "$W/big.th" ] || "$W/thgen" -dur 67h -o "$W/big.th"
	[ -d "$W/day" ] || "$W/thgen" -dur 1h -n 24 -seed 100 -o "$W/day"
	[ -d "$W/games" ] || "$W/thgen" -dur 5m -n 200 -seed 1000 -o "$W/games"
	# A 16-hour server file of 2 mostly idle players and 8,000 commands an
	# hour (146,112 events).
	[ -f "$W/long.th" ] || "$W/thgen" -dur 16h -players 2 -cmds 8000 -idle 0.95 -o "$W/long.th"
fi

if has rss; then
	# Peak RSS of `ingest` (index update included) over the RSS of the same
	# binary doing nothing (`--help`), and its time against zstd -3 -T1.
	/usr/bin/time -v "$W/archivectl" --help >/dev/null 2>"$W/base.time" || true
	base=$(kib "$W/base.time")
	echo "baseline RSS ${base} KiB"
	for c in hour big day games long; do
		rm -rf "$W/a-$c"
		/usr/bin/time -v $A --archive "$W/a-$c" ingest "$W/$c"* >/dev/null 2>"$W/ingest-$c.time"
		if [ -d "$W/$c" ]; then
			/usr/bin/time -v sh -c "cat $W/$c/* | nice -n 19 zstd -3 -T1 -q -c >/dev/null" 2>"$W/zstd-$c.time"
		else
			/usr/bin/time -v nice -n 19 zstd -3 -T1 -q -c "$W/$c.th" >/dev/null 2>"$W/zstd-$c.time"
		fi
		echo "ingest $c: peak RSS over baseline $(( ($(kib "$W/ingest-$c.time") - base) / 1024 )) MiB; $(secs "$W/ingest-$c.time") vs zstd -3 -T1 $(secs "$W/zstd-$c.time")"
	done
fi

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

if has frames; then
	# `frames` at one tick in the middle, 21 runs each: CPU (user+sys) and
	# wall medians, the 1 GB recording against the one-hour one.
	for c in hour:90000 big:6000000; do
		name=${c%%:*} tick=${c#*:}
		for i in $(seq 21); do
			/usr/bin/time -f "%e %U %S" $A --archive "$W/a-$name" frames $ID --from $tick --to $tick 2>&1 >/dev/null | tail -1
		done >"$W/frames-$name.txt"
		echo "frames $name: wall $(awk '{print $1}' "$W/frames-$name.txt" | median) s, cpu $(awk '{print $2+$3}' "$W/frames-$name.txt" | median) s"
	done
fi

if has export; then
	# Whole export to a file against zstd -dc of the same bytes (compressed
	# with zstd -3) to a file, alternating, 5 runs each: wall and CPU
	# (user+sys) medians. The output is removed before every run of both:
	# zstd's `>` truncates the old file first, while export keeps it until
	# its rename, and writing 1 GB beside a live 1 GB file cost 1.2-1.6 s
	# more system time on the measuring VM (fresh page-cache pages).
	for c in hour big; do
		nice -n 19 zstd -3 -T1 -q -f "$W/$c.th" -o "$W/$c.th.zst"
		for i in 1 2 3 4 5; do
			rm -f "$W/out.th" "$W/out.zstd"
			/usr/bin/time -f "export %e %U %S" $A --archive "$W/a-$c" export $ID -o "$W/out.th" 2>&1 >/dev/null | tail -1
			cmp "$W/out.th" "$W/$c.th"
			/usr/bin/time -f "zstd %e %U %S" sh -c "nice -n 19 zstd -dc -q $W/$c.th.zst > $W/out.zstd" 2>&1 | tail -1
		done >"$W/export-$c.txt"
		for t in export zstd; do
			echo "$t $c: wall $(awk -v t=$t '$1 == t {print $2}' "$W/export-$c.txt" | median) s, cpu $(awk -v t=$t '$1 == t {print $3+$4}' "$W/export-$c.txt" | median) s"
		done
	done
fi

if has stored; then
	# Stored bytes (archivectl stats) against the sum of per-file xz -9e,
	# and allocated (du) against stored, for the 200 games and the corpus.
	corpus=${CORPUS:-../shared/corpus}
	rm -rf "$W/a-corpus"
	$A --archive "$W/a-corpus" ingest "$corpus" >/dev/null 2>&1 || true
	for c in games corpus; do
		src="$W/games"
		[ $c = corpus ] && src=$corpus
		# Only the files the archive holds (the corpus also has notes and
		# files of no known format): ingesting again lists them.
		xz=0
		for f in $($A --archive "$W/a-$c" ingest --json "$src" 2>/dev/null |
			grep '"message_type":"ingest"' | grep -v '"outcome":"\(skipped\|failed\)"' | sed 's/.*"path":"\([^"]*\)".*/\1/'); do
			xz=$((xz + $(nice -n 19 xz -9e -c "$f" | wc -c)))
		done
		stored=$($A --archive "$W/a-$c" stats --json | awk -F'[:,]' '/"stored_bytes"/ {print $2; exit}')
		alloc=$(du -sL --block-size=1 "$W/a-$c" | awk '{print $1}')
		apparent=$(du -sbL "$W/a-$c" | awk '{print $1}')
		echo "stored $c: $stored B vs per-file xz -9e $xz B ($(echo "scale=3; $stored/$xz" | bc)×); allocated $alloc B ($(echo "scale=3; $alloc/$stored" | bc)× stored), apparent $apparent B"
	done
fi

if has pairs; then
	# Each pair runs the archive's command, then its baseline, so that both
	# see the same moment of a noisy machine; the ratio is of wall times.
	# Ingest is into a fresh archive, index update included; the export
	# reads the 1 GB archive that ingest wrote, to a freshly removed file.
	n=${PAIRS:-5}
	[ -f "$W/big.th.zst" ] || zstd -3 -T1 -q -f "$W/big.th" -o "$W/big.th.zst"
	wall() { /usr/bin/time -f "%e" sh -c "$1" 2>&1 >/dev/null | tail -1; }
	for c in ${PAIRS_OF:-big games export}; do
		for i in $(seq "$n"); do
			case $c in
			big)
				a=$(wall "rm -rf $W/p-big && $W/archivectl --archive $W/p-big ingest $W/big.th")
				b=$(wall "zstd -3 -T1 -q -c $W/big.th") ;;
			games)
				a=$(wall "rm -rf $W/p-games && $W/archivectl --archive $W/p-games ingest $W/games")
				b=$(wall "cat $W/games/* | zstd -3 -T1 -q -c") ;;
			export)
				[ -d "$W/p-big" ] || $W/archivectl --archive "$W/p-big" ingest "$W/big.th" >/dev/null 2>&1
				rm -f "$W/out.th" "$W/out.zstd"
				a=$(wall "$W/archivectl --archive $W/p-big export $ID -o $W/out.th")
				b=$(wall "zstd -dc -q $W/big.th.zst > $W/out.zstd")
				rm -f "$W/out.th" "$W/out.zstd" ;;
			esac
			echo "$a $b $(echo "scale=3; $a/$b" | bc)"
		done >"$W/pairs-$c.txt"
		echo "pairs $c ($n): archive $(awk '{print $1}' "$W/pairs-$c.txt" | median) s, baseline $(awk '{print $2}' "$W/pairs-$c.txt" | median) s, ratio median $(awk '{print $3}' "$W/pairs-$c.txt" | median) ($(awk '{print $3}' "$W/pairs-$c.txt" | sort -n | sed -n '1p;$p' | paste -sd-))"
	done
fi

if has kinds; then
	# One line per kind: files and native bytes; stored bytes after a fresh
	# ingest against the sum of per-file xz -9e (ratio); ingest wall and CPU
	# (user+sys) medians against cat | zstd -3 -T1 and against per-file
	# xz -9e (alternating: ingest, zstd, then xz in the first KXZPAIRS
	# pairs), with the median of the pairs' wall ratios; the largest
	# file's export against zstd -dc of its zstd -3 (5 alternating runs,
	# medians); stored after recompress. Then the sum over the kinds.
	go build -o "$W/simgen" ./internal/cmd/simgen
	kn=${KPAIRS:-3}
	kx=${KXZPAIRS:-1}
	corpus=${CORPUS:-../shared/corpus}
	timed() { /usr/bin/time -f "%e %U %S" sh -c "$1" 2>&1 >/dev/null | tail -1; }
	col() { awk -v c="$1" '{print $c}' "$2" | median; }
	cpu() { awk '{print $2+$3}' "$1" | median; }
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
	printf '%s\n' "kind files native_B stored_B xz9e_B stored/xz ingest_wall_s ingest_cpu_s zstd_wall_s zstd_cpu_s ingest/zstd(range) xz_wall_s ingest/xz export_s zstd_dc_s export/zstd recompressed_B recompressed/xz"
	tn=0 ts=0 tx=0 tr=0 tf=0
	for k in ${KINDS:-solo-race small full crowd idle chatty rounds legacy corpus}; do
		d="$W/kinds/$k"
		if [ ! -d "$d" ]; then
			mkdir -p "$d.tmp"
			if [ "$k" = corpus ]; then
				cp "$corpus"/teehistorian/*.teehistorian "$d.tmp"/
			else
				"$W/simgen" -kind "$k" -seed "${KSEED:-1}" -o "$d.tmp"
			fi
			mv "$d.tmp" "$d"
		fi
		files=$(ls "$d" | wc -l)
		native=$(cat "$d"/* | wc -c)
		r="$W/kinds-$k"
		: >"$r.ingest"; : >"$r.zstd"; : >"$r.xz"; : >"$r.ratio"
		for i in $(seq "$kn"); do
			a=$(timed "rm -rf $W/k-$k && $W/archivectl --archive $W/k-$k ingest $d")
			b=$(timed "cat $d/* | zstd -3 -T1 -q -c")
			echo "$a" >>"$r.ingest"
			echo "$b" >>"$r.zstd"
			echo "$(ratio "${a%% *}" "${b%% *}")" >>"$r.ratio"
			if [ "$i" -le "$kx" ]; then
				timed "for f in $d/*; do xz -9e -c \$f | wc -c; done >$r.xzsizes" >>"$r.xz"
			fi
		done
		xz=$(awk '{s+=$1} END {print s}' "$r.xzsizes")
		stored=$("$W/archivectl" --archive "$W/k-$k" stats --json | awk -F'[:,]' '/"stored_bytes"/ {print $2 + 0; exit}')
		# The largest file's export, against zstd -dc of its zstd -3.
		big=$(ls -S "$d" | head -1)
		id=$("$W/archivectl" --archive "$W/k-$k" ingest --json "$d/$big" 2>/dev/null | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -1)
		zstd -3 -T1 -q -f "$d/$big" -o "$r.big.zst"
		: >"$r.export"; : >"$r.dc"
		for i in 1 2 3 4 5; do
			rm -f "$r.out" "$r.outz"
			timed "$W/archivectl --archive $W/k-$k export $id -o $r.out" >>"$r.export"
			cmp "$r.out" "$d/$big"
			timed "zstd -dc -q $r.big.zst > $r.outz" >>"$r.dc"
		done
		rm -f "$r.out" "$r.outz" "$r.big.zst"
		"$W/archivectl" --archive "$W/k-$k" recompress >/dev/null 2>&1
		rc=$("$W/archivectl" --archive "$W/k-$k" stats --json | awk -F'[:,]' '/"stored_bytes"/ {print $2 + 0; exit}')
		iw=$(col 1 "$r.ingest") zw=$(col 1 "$r.zstd") xw=$(col 1 "$r.xz")
		ew=$(col 1 "$r.export") dw=$(col 1 "$r.dc")
		echo "$k $files $native $stored $xz $(ratio "$stored" "$xz") $iw $(cpu "$r.ingest") $zw $(cpu "$r.zstd") $(median <"$r.ratio")($(sort -n "$r.ratio" | sed -n '1p;$p' | paste -sd-)) $xw $(ratio "$iw" "$xw") $ew $dw $(ratio "$ew" "$dw") $rc $(ratio "$rc" "$xz")"
		tn=$((tn + native)) ts=$((ts + stored)) tx=$((tx + xz)) tr=$((tr + rc)) tf=$((tf + files))
	done
	echo "sum $tf $tn $ts $tx $(ratio "$ts" "$tx") - - - - - - - - - - $tr $(ratio "$tr" "$tx")"
fi
