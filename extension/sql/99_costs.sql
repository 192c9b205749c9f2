
-- ---------------------------------------------------------------------------
-- The planner's cost of corpq's per-row functions (docs/scaling.md, "Function
-- costs").  With the default COST 1 the planner took a model's forward pass
-- for as cheap as an addition, and kept curation queries (a CREATE TABLE AS
-- of filter_rejects, per-row scoring) on one core.  Measured by
-- test/bench/bench_costs.sh in the planner's own units: a function's COST
-- counts cpu_operator_costs, and the planner prices a row of a bare scan with
-- count() at 5 of them, about 0.1 us on the machine it was measured on (so a
-- unit is 0.02 us); figures for preset small, 20-token pairs, rounded.  Set
-- here by name, for every overload (a new overload gets its name's figure),
-- so that the figures sit in one place next to each other; a name that
-- matches no function is an error.  An update script sets them by
-- signature (ALTER FUNCTION ... COST), for new overloads too.
-- Set-returning functions keep the default: PostgreSQL charges a function
-- in FROM once per query, even LATERAL to a table it runs once per row of
-- (token_scores, token_hits, translate_nbest), so their cost would read as a
-- one-time cost; score(), dual_xent_scores() and translate_rows() run once,
-- on a corpus whose size the planner cannot see.
-- ---------------------------------------------------------------------------
DO $$
DECLARE
    c record;
    f regprocedure;
    n int;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        -- rule filters and duplicate keys (0.06 to 1.8 us; is_copy, three near
        -- keys, 1.33 us = 65 units alone on the machine; 55 and 75 on a busy one)
        ('html_tags', 3), ('text_length', 5), ('alpha_ratio', 10), ('numerals_match', 15),
        ('dedup_key', 20), ('is_copy', 60), ('length_ratio', 20), ('terminal_punct_score', 20),
        ('char_script_ratio', 30), ('repetition', 100),
        -- language identification, CLD2 (28 us)
        ('langid', 1500), ('lang_is', 1500),
        -- filter specs: 5-8 us with filter_defaults(), 35 us with langid added;
        -- a dual_xent filter costs what dual_xent costs
        ('filter_keeps', 1000), ('filter_rejects', 1000), ('filter_stats_trans', 1000),
        -- subwords and vocabularies (0.7 to 2.3 us)
        ('vocab_encode', 50), ('bpe_apply', 80), ('bpe_tokens', 100),
        -- sentence metrics and the aggregates' transitions (1 to 6 us)
        ('bleu_tokenize', 50), ('bleu_trans', 200), ('sentence_bleu', 250),
        ('chrf_trans', 300), ('sentence_chrf', 300),
        -- lexicons (1 us for a lookup, 75 us for an alignment)
        ('mono_uncertainty', 50), ('word_rarity', 50),
        ('align', 4000), ('align_score', 4000), ('coverage', 4000), ('align_stats', 4000),
        -- the pair-quality classifier on string features (8 us: the features,
        -- then 200 trees); a classifier with model features also runs their
        -- functions, whose COSTs the planner does not add
        ('pair_quality', 400), ('classifier_features', 400),
        -- CAV counts of a pair (60 us); ANTAP's prediction of a token (53 us,
        -- docs/benchmarks.md)
        ('cav_accumulate_trans', 3000), ('antap_predict', 2500),
        -- a model's forward pass: small 1.7 ms per pair in float32, 0.9 ms in
        -- int8, tiny 0.2 ms; dual_xent two of them; uncertainty 30 of them
        -- (its default passes)
        ('sent_prob', 100000), ('sent_logprob', 100000), ('dual_xent', 200000),
        ('uncertainty', 2500000),
        -- an encoder's pass over one sentence: small 0.48 ms (no decoder,
        -- no output projection)
        ('embed', 25000),
        -- two of them, 0.91 ms: a pair's sides (a filter_keeps call with an
        -- embedding_cosine filter costs what embedding_cosine costs)
        ('embedding_cosine', 50000),
        -- beam search (small, beam 5: 190-270 ms per sentence)
        ('translate', 10000000)
    ) v(name, cost)
    LOOP
        n := 0;
        FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
                  WHERE p.pronamespace OPERATOR(pg_catalog.=) 'corpq'::pg_catalog.regnamespace
                    AND p.proname OPERATOR(pg_catalog.=) c.name
        LOOP
            EXECUTE pg_catalog.format('ALTER FUNCTION %s COST %s', f, c.cost);
            n := n OPERATOR(pg_catalog.+) 1;
        END LOOP;
        IF n OPERATOR(pg_catalog.=) 0 THEN
            RAISE EXCEPTION 'corpq install script: no function corpq.% to set the COST of', c.name;
        END IF;
    END LOOP;
END
$$;
