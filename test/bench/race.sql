-- The timing functions of the SQL benchmarks (bench_cav_sql.sh,
-- bench_metrics.sh): best_ms(q, reps), the best of reps runs of q in
-- milliseconds, and race(q, reps), the best with 0 and with 2 parallel workers.
CREATE FUNCTION best_ms(q text, reps int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; best float8 := 'infinity';
BEGIN
    FOR i IN 1 .. reps LOOP
        t0 := clock_timestamp();
        EXECUTE q;
        best := least(best, 1000 * extract(epoch FROM clock_timestamp() - t0));
    END LOOP;
    RETURN best;
END $$;
-- best of reps runs with 0 and with 2 workers, alternating so that load from
-- other processes hits both alike
CREATE FUNCTION race(q text, reps int, OUT ms_0 float8, OUT ms_2 float8) LANGUAGE plpgsql AS $$
BEGIN
    ms_0 := 'infinity';
    ms_2 := 'infinity';
    FOR i IN 1 .. reps LOOP
        PERFORM set_config('max_parallel_workers_per_gather', '0', true);
        ms_0 := least(ms_0, best_ms(q, 1));
        PERFORM set_config('max_parallel_workers_per_gather', '2', true);
        ms_2 := least(ms_2, best_ms(q, 1));
    END LOOP;
END $$;
