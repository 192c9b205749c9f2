#!/usr/bin/env bash
# SentencePiece models as hostile input (issue 41): a fuzz test of
# spm_import and of every function that loads a stored model.  A real model
# is trained with Debian's spm_train (unigram, nmt_nfkc: it has a normalizer
# charsmap); test/integration/spm_mutate.py makes N mutated models from it
# (default 1,200; seeded, model i is the same on every run): trie units
# altered (random words, bit flips, offsets, leaf values, cycles), normalized
# strings cut or changed, the trie size field changed, huge pieces,
# truncations, random byte flips, varint and length fields corrupted, bad
# pieces, piece types, model types and unk_surface, a second normalizer or a
# denormalizer spec.  An ordinary role (alice) imports each one and a
# vocabulary of hostile pieces over it; another (bob) runs bpe_tokens,
# bpe_apply, vocab_encode and vocab_decode with every model that was stored,
# over hostile but valid text (issue 41's string among it).  Passes when no
# backend died (the server never reinitialized, both roles' sessions ran
# to their end) and no output is anything but UTF-8 without
# NUL; prints what was refused and why.  CORPQ_SPM_FUZZ_N and
# CORPQ_SPM_FUZZ_SEED change the run.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

corpq_in_cluster -t 900

N=${CORPQ_SPM_FUZZ_N:-1200}
SEED=${CORPQ_SPM_FUZZ_SEED:-41}
CHUNK=300
work=$(mktemp -d /tmp/corpq-spm-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"               # the server reads the models

# ---- the real model and its mutants
/usr/bin/python3 -c '
words = ["the", "house", "of", "children", "tree", "light", "café", "naïve", "Straße", "ＦＵＬＬ", "ﬁne", "①", "ｶﾞ", "㍿"]
for i in range(600):
    print(" ".join(words[(i * 7 + k * 5 + k * k) % len(words)] for k in range(2 + i % 9)))
' > "$work/corpus.txt"
spm_train --input="$work/corpus.txt" --model_prefix="$work/real" --vocab_size=30 --hard_vocab_limit=false --model_type=unigram \
	--num_threads=1 --minloglevel=2 > /dev/null 2>&1 || fail "spm_train could not train the real model"
/usr/bin/python3 test/integration/spm_mutate.py fuzz "$work/real.model" "$work/m" "$N" "$SEED"
chmod -R a+rX "$work"

qa() { psql -X -v ON_ERROR_STOP=1 -Atq -U fz_alice "$@"; }
qb() { psql -X -v ON_ERROR_STOP=1 -Atq -U fz_bob "$@"; }
# A backend that dies makes the postmaster restart every other process
# (pg_postmaster_start_time() stays the same): the checkpointer's start
# time is the one that changes.
started_sql="SELECT backend_start FROM pg_stat_activity WHERE backend_type = 'checkpointer'"
started=$(q -c "$started_sql")
no_restart() {
	cluster_ready
	[ "$(q -c "$started_sql")" = "$started" ] ||
		fail "the server restarted: a backend died ($1; last model imported: $(q -c "SELECT max(i) FROM fz_import"))"
}

q <<SQL
CREATE EXTENSION corpq;
CREATE ROLE fz_alice LOGIN PASSWORD '$PGPASSWORD';
CREATE ROLE fz_bob LOGIN PASSWORD '$PGPASSWORD';
-- the mutants' bytes for alice (she may not read server files herself)
CREATE FUNCTION public.fz_model(i int) RETURNS bytea LANGUAGE sql SECURITY DEFINER
    SET search_path = pg_catalog
    AS \$\$ SELECT pg_read_binary_file(format('%s/m/fuzz_%s.spm', '$work', lpad(i::text, 4, '0'))) \$\$;
REVOKE ALL ON FUNCTION public.fz_model(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.fz_model(int) TO fz_alice;
CREATE TABLE fz_import (i int PRIMARY KEY, stored bool NOT NULL, vocab bool, sqlstate text, error text);
CREATE TABLE fz_use (i int NOT NULL, fn text NOT NULL, text_no int NOT NULL, outcome text NOT NULL);
GRANT SELECT, INSERT, DELETE ON fz_import TO fz_alice;
GRANT SELECT ON fz_import TO fz_bob;
GRANT INSERT ON fz_use TO fz_bob;
-- hostile but valid text: compatibility characters NFKC rewrites, combining
-- marks, emoji, controls, spaces, U+FFFD, the pieces' own marks and names
CREATE TABLE fz_text (n int PRIMARY KEY, s text NOT NULL);
INSERT INTO fz_text VALUES
    (1, 'ＡＢＣ ﬁ ① ｶﾞ ㍿ ﷺ'), (2, 'the house of children'), (3, ''), (4, '   '),
    (5, repeat('ＡＢＣ', 400)), (6, repeat('x', 3000)), (7, E'a\tb\nc\u0001d\u007f'),
    (8, U&'e\0301\0301\0301 \+01F600\+01F3FB \FFFD \2581\2581 <unk> <0xE3> <s>'),
    (9, U&'\3000\00A0\2003 ﬃ ﬄ ǆ ㋿ ㉑ ¼ Ⅻ ㌀'), (10, repeat('ﷺ', 200)),
    (11, U&'\200B\200D\FEFF\+0E0001 z');
GRANT SELECT ON fz_text TO fz_bob;
-- a vocabulary document of hostile pieces, made over each stored model
CREATE TABLE fz_tokens AS SELECT '["<s>", "<pad>", "</s>", "<unk>", "▁", "▁▁", "▁ＡＢＣ", "ＡＢＣ", "ﷺ",
    "<0xE3>", "<0x81>", "<0xA7>", "<0xFF>", "<s>x", "▁the", "a", "😀", "̀", "x▁y"]'::jsonb AS tokens;
GRANT SELECT ON fz_tokens TO fz_alice;
-- UTF-8 without NUL: what PostgreSQL stores, dumps and restores
CREATE FUNCTION public.fz_utf8(t text) RETURNS bool LANGUAGE plpgsql AS \$\$
BEGIN
    RETURN t IS NULL OR (convert_from(convert_to(t, 'UTF8'), 'UTF8') = t
                         AND position('\\x00'::bytea IN convert_to(t, 'UTF8')) = 0);
EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
    RETURN false;
END \$\$;

-- alice: import models lo..hi, and a vocabulary over each stored one
CREATE PROCEDURE public.fz_import_range(lo int, hi int) LANGUAGE plpgsql AS \$\$
DECLARE
    d text;
    v bool;
BEGIN
    FOR i IN lo..hi LOOP
        BEGIN
            PERFORM corpq.spm_import('fz_' || i, public.fz_model(i));
            BEGIN
                PERFORM corpq.vocab_import('fzv_' || i, jsonb_build_object('spm', 'fz_' || i,
                                           'tokens', (SELECT tokens FROM public.fz_tokens)));
                v := true;
            EXCEPTION WHEN others THEN
                v := false;
            END;
            INSERT INTO public.fz_import VALUES (i, true, v, NULL, NULL);
        EXCEPTION WHEN others THEN
            GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
            INSERT INTO public.fz_import VALUES (i, false, NULL, SQLSTATE, SQLERRM || ': ' || coalesce(d, ''));
        END;
        COMMIT;
    END LOOP;
END \$\$;

-- bob: every function over every text, with each stored model of lo..hi
CREATE PROCEDURE public.fz_use_range(lo int, hi int) LANGUAGE plpgsql AS \$\$
DECLARE
    m record;
    t record;
    out text;
    ids int[];
BEGIN
    FOR m IN SELECT i, 'fz_' || i AS model, 'fzv_' || i AS vocab, vocab AS has_vocab
               FROM public.fz_import WHERE stored AND i BETWEEN lo AND hi ORDER BY i LOOP
        FOR t IN SELECT n, s FROM public.fz_text ORDER BY n LOOP
            BEGIN
                out := array_to_string(corpq.bpe_tokens(m.model, t.s), ' ');
                INSERT INTO public.fz_use VALUES (m.i, 'bpe_tokens', t.n, CASE WHEN public.fz_utf8(out) THEN 'ok' ELSE 'NOT UTF-8' END);
            EXCEPTION WHEN others THEN
                INSERT INTO public.fz_use VALUES (m.i, 'bpe_tokens', t.n, 'refused: ' || SQLERRM);
            END;
            BEGIN
                out := corpq.bpe_apply(m.model, t.s);
                INSERT INTO public.fz_use VALUES (m.i, 'bpe_apply', t.n, CASE WHEN public.fz_utf8(out) THEN 'ok' ELSE 'NOT UTF-8' END);
            EXCEPTION WHEN others THEN
                INSERT INTO public.fz_use VALUES (m.i, 'bpe_apply', t.n, 'refused: ' || SQLERRM);
            END;
            CONTINUE WHEN NOT m.has_vocab;
            BEGIN
                ids := corpq.vocab_encode(m.vocab, t.s);
                out := corpq.vocab_decode(m.vocab, ids);
                INSERT INTO public.fz_use VALUES (m.i, 'vocab_decode', t.n, CASE WHEN public.fz_utf8(out) THEN 'ok' ELSE 'NOT UTF-8' END);
            EXCEPTION WHEN others THEN
                INSERT INTO public.fz_use VALUES (m.i, 'vocab_decode', t.n, 'refused: ' || SQLERRM);
            END;
        END LOOP;
        CONTINUE WHEN NOT m.has_vocab;
        BEGIN
            -- every token of the vocabulary, hostile pieces included, forwards and backwards
            out := corpq.vocab_decode(m.vocab, ARRAY(SELECT g FROM generate_series(0, 18) g))
                   || corpq.vocab_decode(m.vocab, ARRAY(SELECT g FROM generate_series(18, 0, -1) g));
            INSERT INTO public.fz_use VALUES (m.i, 'vocab_decode', 0, CASE WHEN public.fz_utf8(out) THEN 'ok' ELSE 'NOT UTF-8' END);
        EXCEPTION WHEN others THEN
            INSERT INTO public.fz_use VALUES (m.i, 'vocab_decode', 0, 'refused: ' || SQLERRM);
        END;
    END LOOP;
END \$\$;
SQL

for ((lo = 0; lo < N; lo += CHUNK)); do
	hi=$((lo + CHUNK - 1 < N - 1 ? lo + CHUNK - 1 : N - 1))
	out=$(qa -c "CALL public.fz_import_range($lo, $hi)" -c "SELECT 'alive'" 2>&1) ||
		{ no_restart "alice's imports $lo..$hi"; fail "alice's session ended: $out"; }
	[ "$out" = alive ] || fail "alice's session: $out"
	no_restart "alice's imports $lo..$hi"
	out=$(qb -c "CALL public.fz_use_range($lo, $hi)" -c "SELECT 'alive'" 2>&1) ||
		{ no_restart "bob's use of $lo..$hi"; fail "bob's session ended: $out"; }
	[ "$out" = alive ] || fail "bob's session: $out"
	no_restart "bob's use of $lo..$hi"
	qa >/dev/null <<SQL
SELECT corpq.vocab_drop(name) FROM corpq.vocabularies WHERE name LIKE 'fzv\_%';
SELECT corpq.bpe_drop(name) FROM corpq.bpe_models WHERE name LIKE 'fz\_%';
SQL
done

# ---- what happened
[ "$(q -c "SELECT count(*) FROM fz_import")" = "$N" ] || fail "not every model was tried"
log "$N models: $(q -c "SELECT count(*) FILTER (WHERE stored) || ' stored (' || count(*) FILTER (WHERE vocab) || ' with a vocabulary), '
                          || count(*) FILTER (WHERE NOT stored) || ' refused' FROM fz_import")"
q -F ' ' -c "SELECT count(*), sqlstate, left(regexp_replace(regexp_replace(error,
                      '^invalid SentencePiece model: not a SentencePiece model corpq can load: ', ''),
                      '(?<!UTF-)[0-9]+', 'N', 'g'), 100)
               FROM fz_import WHERE NOT stored GROUP BY 2, 3 ORDER BY 1 DESC, 3" | sed 's/^/    /'
log "bob: $(q -c "SELECT count(*) || ' calls, ' || count(*) FILTER (WHERE outcome = 'ok') || ' ok, '
                         || count(*) FILTER (WHERE outcome LIKE 'refused%') || ' refused, '
                         || count(*) FILTER (WHERE outcome = 'NOT UTF-8') || ' not UTF-8' FROM fz_use")"
q -F ' ' -c "SELECT count(*), fn, outcome FROM fz_use WHERE outcome <> 'ok' GROUP BY 2, 3 ORDER BY 1 DESC" | sed 's/^/    /'
[ "$(q -c "SELECT count(*) FROM fz_use WHERE outcome = 'NOT UTF-8'")" = 0 ] || fail "outputs that are not UTF-8"
[ "$(q -c "SELECT count(*) FROM fz_import WHERE sqlstate <> '22P03'")" = 0 ] ||
	fail "refusals that are not invalid_binary_representation (22P03)"
[ "$(q -c "SELECT count(*) FROM fz_import WHERE stored")" -gt 0 ] || fail "no mutant was stored: nothing was used"
[ "$(q -c "SELECT count(*) FROM fz_use")" -gt 0 ] || fail "bob made no call"
log "ok: no backend died, every output was UTF-8"
