#!/usr/bin/env bash
# Reproduce issue 11's findings with the installed chatmem; run before and after a change.
#   bash benchmarks/trust_findings.sh        (uses a scratch history file and HOME)
# Prints one labelled block per finding; nothing here calls a network model.
set -u
cd "$(dirname "$0")/.."
work=$(mktemp -d)
export HOME=$work/home CHATMEM_DB=$work/chat.db
mkdir -p "$HOME"
unset CHATMEM_PROVIDER CHATMEM_MODEL OPENAI_API_KEY OPENAI_BASE_URL
s() { printf '\n## %s\n' "$*"; }

s "1a replay support.jsonl, no --provider (README: buffer 20,829 / window 7,001)"
/usr/bin/time -f "%e s" chatmem replay sessions/support.jsonl -s buffer -s window 2>&1 \
  | grep -E "buffer|window|tokenizer|[0-9.]+ s$"

s "1b what-if of the recorded strategy on a scripted session (recorded vs what-if estimate)"
chatmem sessions import sessions/support.jsonl --name sup >/dev/null 2>&1
printf 'My name is Ada.\nI live in Paris.\nWhat is my name?\n' \
  | chatmem chat scr -s window:k=2 --provider scripted >/dev/null 2>&1
/usr/bin/time -f "%e s" chatmem inspect scr --turn 3 -s window:k=2 --json 2>"$work/t" \
  | python3 -c "import json,sys; d=json.load(sys.stdin); print('recorded estimate', d['turn']['estimated_tokens'], '| what-if', d['context']['tokens'], '| tokenizer named:', 'tokenizer' in d)"
tail -1 "$work/t"

s "1c what-if of turn 1 after /system: which system prompt"
printf 'hello\n/system You are a pirate.\nagain\n' \
  | chatmem chat sys1 -s window --provider scripted --system "You are a librarian." >/dev/null 2>&1
chatmem inspect sys1 --turn 1 -s buffer --json 2>/dev/null \
  | python3 -c "import json,sys; d=json.load(sys.stdin); print('turn 1 what-if system:', d['messages'][0]['content'])"

s "1d what-if of entity on a scripted session: facts kept by the session vs by the what-if"
printf 'My name is Ada.\nMy order number is ORD-7731.\nok\n' \
  | chatmem chat ent -s entity --provider scripted >/dev/null 2>&1
chatmem facts list --session ent --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('session facts:', len([f for f in (d if isinstance(d,list) else d.get('facts',[])) if f.get('kind')=='fact']))"
chatmem inspect ent --turn 3 -s entity:k=1 --json 2>/dev/null \
  | python3 -c "import json,sys; d=json.load(sys.stdin); p=[x for x in d['context']['parts'] if x['kind']=='facts']; print('what-if facts part lines:', len(p[0]['messages'][0]['content'].splitlines())-3 if p else 0)"

s "2 replay --save-as: facts tokens in saved turns vs printed"
chatmem replay sessions/support.jsonl -s window+entity --save-as saved --provider scripted --json 2>/dev/null \
  | python3 -c "import json,sys; d=json.load(sys.stdin); print('printed total', d['strategies'][0]['prompt_tokens']['total'])"
chatmem inspect saved --turn 1 --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); f=[p for p in d['context']['parts'] if p['kind']=='facts']
print('saved turn 1 facts tokens:', f[0]['tokens'] if f else 0)"

s "3 a new window+entity session: facts sent on its first turn"
printf 'hi there\n' | chatmem chat fresh -s window+entity --provider scripted --show-prompt 2>&1 | grep -E '"key"' | head -8
chatmem facts list 2>/dev/null | head -12

s "3b facts block cost: tokens of the facts part with 1 and with 5 facts"
printf 'My name is Ada.\nok\n' | chatmem chat f1 -s entity --provider scripted >/dev/null 2>&1
printf 'My name is Bo.\nMy order number is ORD-7731.\nMy city is Oslo.\nMy budget is 300 euros.\nMy dog is called Rex and my team is blue.\nok\n' \
  | chatmem chat f5 -s entity --provider scripted >/dev/null 2>&1
for n in f1 f5; do chatmem inspect $n --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); f=[p for p in d['context']['parts'] if p['kind']=='facts'][0]
lines=f['messages'][0]['content'].splitlines(); inside=lines[lines.index('<user-facts>')+1:lines.index('</user-facts>')]
print('$n', 'facts', len(inside), 'tokens', f['tokens'])"; done

s "4 JSON shapes of strategy"
chatmem inspect ent --json 2>/dev/null | python3 -c "import json,sys; print('inspect:', json.load(sys.stdin)['strategy'])"
chatmem replay sessions/support.jsonl -s window:k=2 --provider scripted --json 2>/dev/null | python3 -c "import json,sys; s=json.load(sys.stdin)['strategies'][0]; print('replay:', {k: s[k] for k in ('strategy','name','params') if k in s})"
chatmem eval sessions/support.jsonl -s window:k=2 --provider scripted --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); s=d['strategies'][0]; print('eval:', s.get('strategy'), '| tokenizer' , d.get('tokenizer', s.get('tokenizer')))"

s "5 --report HTML"
chatmem eval sessions/travel-zh.jsonl -s buffer -s window -s entity --provider scripted --report "$work/r.html" >/dev/null 2>&1
python3 - "$work/r.html" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
print("bytes", len(html), "| <table>:", html.count("<table"), "| <svg>:", html.count("<svg"),
      "| <pre>:", html.count("<pre"), "| prefers-color-scheme:", "prefers-color-scheme" in html)
PY

s "6 eval of an imported session"
chatmem eval sup -s window 2>&1 | tail -1
chatmem eval sessions/support.jsonl --provider scripted 2>&1 | tail -1

s "7 export after /system: system prompts recorded; distinct timestamps (the scripted model answers within a millisecond)"
chatmem sessions export sys1 2>/dev/null | python3 -c "
import json,sys
lines=[json.loads(l) for l in sys.stdin]
print('header system:', lines[0].get('system'), '| later prompts recorded:', [l['system_prompt'] for l in lines[1:] if 'system_prompt' in l])
ts=[l.get('ts') for l in lines[1:] if 'role' in l]; print('messages', len(ts), 'distinct ts', len(set(ts)))"
for f in sessions/*.jsonl; do
  n=$(basename "$f" .jsonl)
  chatmem sessions import "$f" --name "rt-$n" >/dev/null 2>&1
  chatmem sessions export "rt-$n" > "$work/a.jsonl" 2>/dev/null
  chatmem sessions import "$work/a.jsonl" --name "rt2-$n" >/dev/null 2>&1
  chatmem sessions export "rt2-$n" > "$work/b.jsonl" 2>/dev/null
  sed 's/"title": "rt2-/"title": "rt-/' "$work/b.jsonl" | cmp -s - "$work/a.jsonl" && r=identical || r=differs
  probes=$(grep -c '"probe"' "$work/a.jsonl"); printf '%s: export→import→export %s; probes kept %s of %s\n' "$n" "$r" "$probes" "$(grep -c '"probe"' "$f")"
done
rm -rf "$work"
