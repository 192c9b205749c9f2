-- corpq.blas_info() and corpq.blas_core (the values depend on the machine:
-- only their form is checked; test/unit/test_cpu.c checks the core rule).
SELECT library LIKE '/%libopenblas%' AS library, config LIKE 'OpenBLAS %DYNAMIC_ARCH%' AS config,
       config LIKE '%' || core || '%' AS core_in_config,
       reason ~ '^(cpuid: |corpq\.blas_core$|OPENBLAS_CORETYPE$)' AS reason,
       threads = current_setting('corpq.threads')::int AS threads,
       inference_kernel IN ('avx512', 'avx2', 'portable') AS inference_kernel
  FROM corpq.blas_info();
SHOW corpq.blas_core;
-- an unknown name lists the valid ones
SET corpq.blas_core = 'Pentium';
-- the loaded core stays: a different one is refused, the same one (any case) is accepted
DO $$
BEGIN
  EXECUTE format('SET corpq.blas_core = %L',
                 CASE WHEN (SELECT core FROM corpq.blas_info()) = 'Prescott' THEN 'Core2' ELSE 'Prescott' END);
  RAISE EXCEPTION 'a different core was accepted';
EXCEPTION WHEN cant_change_runtime_param THEN
  RAISE NOTICE 'refused: %', SQLERRM;
END $$;
SELECT set_config('corpq.blas_core', lower((SELECT core FROM corpq.blas_info())), false)
       = (SELECT core FROM corpq.blas_info()) AS same_core_canonical;
RESET corpq.blas_core;
SHOW corpq.blas_core;
