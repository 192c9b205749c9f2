-- Parallel query with every per-row corpq function and every aggregate:
-- each query runs in a forced parallel plan (workers must really launch) and
-- gives the same rows as the serial plan.  Then the labels in pg_proc that
-- make this possible (and that postgres_fdw and Citus rely on).
SET client_min_messages = warning;

CREATE TABLE sp_corpus AS
SELECT g::bigint AS id, (ARRAY['bible', 'ddtp', 'l10n'])[1 + g % 3] AS domain,
       concat_ws(' ', 'a' || (g % 31), 'b' || (g * 7 % 23), repeat('c' || (g % 5) || ' ', g % 7)) AS src,
       concat_ws(' ', 'x' || (g % 19), repeat('y' || (g * 3 % 13) || ' ', g % 9)) AS tgt
  FROM generate_series(1, 600) g;
ANALYZE sp_corpus;
SELECT corpq.bpe_import('sp_bpe', E'#version: 0.2\nc 1\nc1 2</w>\n');
SELECT corpq.vocab_build('sp_src', 'SELECT src FROM sp_corpus', 'sp_bpe') > 4 AS src_vocab;
SELECT corpq.vocab_build('sp_tgt', 'SELECT tgt FROM sp_corpus') > 4 AS tgt_vocab;
SELECT corpq.model_create('sp_m', '{"preset": "tiny", "max_positions": 32}', 'sp_src', 'sp_tgt', 1);
SELECT corpq.lexicon_train('sp_lex', 'SELECT src, tgt FROM sp_corpus', '{"iterations": 3}') AS job \gset
SELECT corpq.job_wait(:job, '120 s');
CREATE TABLE sp_cavs AS
SELECT domain, corpq.cav_accumulate(src, tgt, 6) AS c FROM sp_corpus GROUP BY domain;
ANALYZE sp_cavs;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- pg_temp.par_check(q): the workers q's forced parallel plan launched, and
-- whether its rows equal the serial plan's (test/regress/fixtures/)
\getenv regress_dir PG_ABS_SRCDIR
\set fixture :regress_dir '/fixtures/par_check.sql'
\i :fixture

CREATE TEMP TABLE sp_queries (label text PRIMARY KEY, q text NOT NULL);
INSERT INTO sp_queries VALUES
('sent_prob, sent_logprob, uncertainty (name)',
 $q$SELECT id, corpq.sent_prob('sp_m', src, tgt), corpq.sent_logprob('sp_m', src, tgt),
           corpq.uncertainty('sp_m', src, tgt, 'enteos', 2, 3) FROM sp_corpus$q$),
('sent_prob, sent_logprob, uncertainty (pinned)',
 $q$SELECT id, corpq.sent_prob('sp_m@1'::corpq.pinned_model, src, tgt),
           corpq.sent_logprob('sp_m@1'::corpq.pinned_model, src, tgt),
           corpq.uncertainty('sp_m@1'::corpq.pinned_model, src, tgt, 'comev', 2, 9) FROM sp_corpus$q$),
('token_scores (name)',
 $q$SELECT c.id, t.* FROM sp_corpus c, corpq.token_scores('sp_m', c.src, c.tgt) t WHERE c.id % 5 = 0$q$),
('token_scores (pinned)',
 $q$SELECT c.id, t.* FROM sp_corpus c, corpq.token_scores('sp_m@1'::corpq.pinned_model, c.src, c.tgt) t
     WHERE c.id % 5 = 1$q$),
('align, align_score, coverage',
 $q$SELECT id, corpq.align('sp_lex', src, tgt), corpq.align_score('sp_lex', src, tgt),
           corpq.coverage('sp_lex', src, tgt) FROM sp_corpus$q$),
('mono_uncertainty, word_rarity, uncsamp_weight, uncsamp',
 $q$SELECT id, u, corpq.word_rarity('sp_lex', src), corpq.uncsamp_weight(u, 1.5, 2),
           corpq.uncsamp(u, 1.5, 2, id, 42)
      FROM (SELECT id, src, corpq.mono_uncertainty('sp_lex', src) AS u FROM sp_corpus) s$q$),
('uncsamp sample (Gather Merge)',
 $q$SELECT id FROM sp_corpus ORDER BY corpq.uncsamp(corpq.mono_uncertainty('sp_lex', src), 1.5, 2, id, 7) DESC
     LIMIT 50$q$),
('bpe_apply, bpe_tokens, vocab_encode, vocab_decode',
 $q$SELECT id, corpq.bpe_apply('sp_bpe', src), corpq.bpe_tokens('sp_bpe', src), corpq.vocab_encode('sp_src', src),
           corpq.vocab_decode('sp_tgt', corpq.vocab_encode('sp_tgt', tgt)) FROM sp_corpus$q$),
('avg(sent_prob) per domain (name)',
 $q$SELECT domain, round(avg(corpq.sent_prob('sp_m', src, tgt))::numeric, 10), count(*)
      FROM sp_corpus GROUP BY domain$q$),
('avg(sent_prob), sum(align_score) per domain (pinned)',
 $q$SELECT domain, round(avg(corpq.sent_prob('sp_m@1'::corpq.pinned_model, src, tgt))::numeric, 10),
           round(sum(corpq.align_score('sp_lex', src, tgt))::numeric, 8)
      FROM sp_corpus GROUP BY domain$q$),
('cav_accumulate(src, tgt)',
 $q$SELECT corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt)) FROM sp_corpus$q$),
('cav_accumulate(src, tgt, l_max) per domain',
 $q$SELECT domain, corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6)) FROM sp_corpus GROUP BY domain$q$),
('cav_accumulate(src, tgt, l_max, targets)',
 $q$SELECT corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6, ARRAY['x1', 'y2'])) FROM sp_corpus$q$),
('cav_accumulate(src, tgt, l_max, targets, bpe)',
 $q$SELECT corpq.cav_to_bytea(corpq.cav_accumulate(src, tgt, 6, NULL, 'sp_bpe')) FROM sp_corpus$q$),
('cav_sum',
 $q$SELECT corpq.cav_to_bytea(corpq.cav_sum(c)) FROM sp_cavs$q$),
('cav analysis functions',
 $q$SELECT domain, corpq.cav_summary(c), corpq.cav_stats(c), corpq.cav_cosine(c, 'x1', 'x2'),
           corpq.cav_pool(c, 'x1', 2, 3), md5(corpq.cav_to_jsonb(c)::text),
           (SELECT string_agg(t::text, ' ') FROM corpq.cav_similar(c, 'x1', 3) t),
           (SELECT count(*) FROM corpq.cav_tokens(c)), (SELECT count(*) FROM corpq.cav_entries(c, 'y2'))
      FROM sp_cavs$q$),
('temperature_weights over per-domain counts',
 $q$SELECT domain, corpq.temperature_weights(n, 5) OVER ()
      FROM (SELECT domain, count(*) AS n FROM sp_corpus GROUP BY domain) s$q$);

SELECT label, (c).workers > 0 AS parallel, (c).same_as_serial
  FROM (SELECT label, pg_temp.par_check(q) AS c FROM sp_queries) s ORDER BY label;

-- the plan shapes
EXPLAIN (COSTS OFF, VERBOSE)
SELECT id, corpq.sent_prob('sp_m@1'::corpq.pinned_model, src, tgt) FROM sp_corpus;
EXPLAIN (COSTS OFF)
SELECT domain, avg(corpq.sent_prob('sp_m', src, tgt)) FROM sp_corpus GROUP BY domain;
EXPLAIN (COSTS OFF)
SELECT corpq.cav_accumulate(src, tgt, 6) FROM sp_corpus;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- ---- labels ------------------------------------------------------------------
-- no corpq function runs with its owner's rights
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.prosecdef;
-- not volatile but kept out of parallel workers: score() and the catalog
-- check run queries through SPI on other relations (foreign tables)
SELECT p.oid::regprocedure, p.provolatile, p.proparallel FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.provolatile <> 'v' AND p.proparallel <> 's'
 ORDER BY p.oid::regprocedure::text COLLATE "C";
-- volatile functions are never parallel safe (they write or keep session state)
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace AND p.provolatile = 'v' AND p.proparallel = 's';
-- as documented: a model name is STABLE, a pinned version IMMUTABLE; whatever
-- reads a catalog row by name is STABLE
SELECT p.oid::regprocedure, p.provolatile, p.proparallel FROM pg_proc p
 WHERE p.pronamespace = 'corpq'::regnamespace
   AND p.proname IN ('sent_prob', 'sent_logprob', 'token_scores', 'uncertainty', 'model_export',
                     'bpe_apply', 'bpe_tokens', 'bpe_export', 'vocab_encode', 'vocab_decode',
                     'align', 'align_score', 'coverage', 'mono_uncertainty', 'word_rarity',
                     'catalog_fingerprint')
 ORDER BY p.oid::regprocedure::text COLLATE "C";
-- aggregates: a combine function and a state type that is not internal (no
-- serial/deserial functions needed) let parallel query, partitionwise
-- aggregation and Citus combine partial states; paired_bootstrap keeps one
-- row per sentence, internal with serial/deserial (Citus gathers its rows)
SELECT a.aggfnoid::regprocedure, a.aggtransfn, a.aggcombinefn, a.aggfinalfn,
       a.aggtranstype::regtype, a.aggserialfn, a.aggdeserialfn, p.proparallel
  FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
 WHERE p.pronamespace = 'corpq'::regnamespace ORDER BY a.aggfnoid::regprocedure::text COLLATE "C";

-- leave the catalog as found (later tests list models and vocabularies)
SELECT corpq.lexicon_drop('sp_lex');
DELETE FROM corpq.jobs WHERE id = :job;
SELECT corpq.model_drop('sp_m');
SELECT corpq.vocab_drop('sp_src'), corpq.vocab_drop('sp_tgt');
SELECT corpq.bpe_drop('sp_bpe');
DROP TABLE sp_corpus, sp_cavs;
