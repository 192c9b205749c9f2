-- ---------------------------------------------------------------------------
-- Curation (docs/curation.md): the pair-quality classifier's synthetic noise.
-- It reads user queries, so it is STABLE and PARALLEL RESTRICTED as
-- mine_pairs is.
-- ---------------------------------------------------------------------------
CREATE FUNCTION corpq.synthetic_noise(clean_query text, options jsonb DEFAULT '{}')
    RETURNS TABLE (src text, tgt text, label text)
    AS 'MODULE_PATHNAME', 'corpq_synthetic_noise'
    LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION corpq.synthetic_noise(text, jsonb) IS
    'labelled negatives made from clean pairs, deterministic by seed: clean_query returns (src, tgt) (rows with a NULL side skipped); the result is every clean pair (label clean) in query order, then for each type round(share * pairs) noisy pairs labelled misaligned_neighbour, misaligned_random, truncated_tgt, truncated_src (30-70% of the words kept), appended_tgt, appended_src, untranslated, untranslated_edited, wrong_language (targets from other_language_query, one text column; none without it); options seed (1), one share per type (0..10; defaults 0.15, 0.15, 0.15, 0.05, 0.10, 0.05, 0.10, 0.10, 0.15), other_language_query';

-- curate() below
-- ---------------------------------------------------------------------------
-- corpq.curate(): one call that curates a table, a row job (docs/curation.md,
-- "One call: curate()"): rules and language ID, copies, exact and near
-- duplicates over the whole corpus, then the classifier (pair_quality) on the
-- pairs left; (id, decision, probability, reasons) into the caller's table.
-- ---------------------------------------------------------------------------
CREATE DOMAIN corpq.reason_list AS text[];
COMMENT ON DOMAIN corpq.reason_list IS
    'text[] as curate() writes its reasons: the row jobs pass a chunk''s values as one array per column, and PostgreSQL has arrays of domains but no arrays of arrays';

CREATE FUNCTION corpq.curate(corpus regclass, target regclass, options jsonb DEFAULT '{}')
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'corpq_curate'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION corpq.curate(regclass, regclass, jsonb) IS
    'curate the table corpus (columns id, src, tgt; options id_column, src_column, tgt_column) as a background row job that inserts (id, decision, probability, reasons) into target (id bigint, decision text, probability double precision, reasons text[]) in committed chunks; returns the job id at once.  Steps, cheap first: a NULL side (null:src, null:tgt), a side without a word (empty:src, empty:tgt), the rule filters of the option filters (default corpq.filter_defaults(); rule:<label>), language ID with src_lang / tgt_lang (langid:src, langid:tgt), a copy (copy); among the pairs kept, duplicates by dedup_key (option dedup: near (default, exact too), exact, none; the smallest id kept, the others duplicate_of:<id> or near_duplicate_of:<id>); then with a classifier (name or name@N) corpq.pair_quality, dropped below threshold (0.5; classifier:<p>).  Options also chunk_rows, threads, skip_existing, foreign_target';
