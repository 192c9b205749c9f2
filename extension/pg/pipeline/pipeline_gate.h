/*
 * Quality gates of the pipelines: a model that is about to translate for a
 * pipeline (rejuvenate's rejuvenator, self_train's teacher) has its BLEU on
 * the dev set measured first, and the final model (rejuvenate's final,
 * self_train's student) is compared with the baseline (the identification
 * model, trained on every pair; the teacher) on the dev set, with the
 * paired-bootstrap p-value.  BLEU is corpq.bleu (sacreBLEU's defaults) of
 * the best of corpq.translate_nbest (corpq.translate's search, with its
 * finished flag) with the pipeline's beam, against the dev targets.  A
 * model below its baseline is flagged with a "warning" in the stage's
 * output (and so in the job's result); "gate": "stop" fails the pipeline
 * there instead.  Without a dev set nothing is measured ("gate": "no dev
 * set" in the output).  A dev query with a label column gets the same
 * figures per label ("labels"), and the warning names the labels below the
 * baseline; "stop" decides on the pooled BLEU only.
 */
#ifndef CORPQ_PIPELINE_GATE_H
#define CORPQ_PIPELINE_GATE_H

#include "postgres.h"

#include "pg/base/options.h"

typedef enum PipelineGate
{
	PIPELINE_GATE_WARN,
	PIPELINE_GATE_STOP
} PipelineGate;

extern const char *const pipeline_gate_names[];

#define PIPELINE_GATE_OPTION(opts, member) \
	{.key = "gate", CORPQ_OPT_FIELD(opts, member), .type = CORPQ_OPT_ENUM, \
	 .names = pipeline_gate_names, .def = PIPELINE_GATE_WARN}

/*
 * JSON members (no braces) measuring model against baseline (NULL: none) on
 * dev (the user's query, NULL: none), translating with beam; ERROR when gate
 * is stop and model is below the baseline.  what names the model in the
 * warning ("rejuvenator").  In a stage's transaction, SPI connected.
 */
char	   *pipeline_gate_check(const char *what, const char *model, const char *baseline,
								const char *dev, int beam, PipelineGate gate);

/*
 * JSON members comparing the final model with baseline on dev: their BLEU,
 * the change and the paired-bootstrap p-value, their translations cut at the
 * length limit and mean words, and a warning when it is worse that names
 * what differs (it runs on, stops short, or the words themselves).
 */
char	   *pipeline_gate_final(const char *what, const char *model, const char *baseline,
								const char *dev, int beam);

#endif
