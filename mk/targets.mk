# mk/targets.mk: GENERATED from analysis/psgd_analysis/catalog.py by
#   /usr/bin/python3 analysis/reproduce.py make-rules > mk/targets.mk
# Do not edit by hand (tests/analysis/test_catalog.py fails when it is stale). Each target
# runs its specs into $(REPORTS)/<spec>.h5 (re-made when older than the spec or the binary;
# REUSE=1 keeps them) and writes $(REPORTS)/<target>.{md,csv,png} through analysis/reproduce.py.

REPRO_TARGETS := adasum-lenet adasum-seq-error adasum-orthogonality adasum-latency adasum-toy adasum-optimizers adasum-local-steps adasum-guide lpp-table1 lpp-frequency lpp-table9 lpp-table1-rule adaptive-figures $(if $(wildcard ../shared/data/xml/bibtex/train.txt),adaptive-bibtex,) adaptive-sensitivity diloco-lm streaming-diloco
.PHONY: adasum-lenet adasum-seq-error adasum-orthogonality adasum-latency adasum-toy adasum-optimizers adasum-local-steps adasum-guide lpp-table1 lpp-frequency lpp-table9 lpp-table1-rule adaptive-figures adaptive-bibtex adaptive-sensitivity diloco-lm streaming-diloco

# R1: Adasum arXiv 5.4 Fig. 6 + tuned-LR table; MLSys 5.2.3 Fig. 4; ~46 CPU-min (261 runs) on 2 cores
adasum-lenet: build | $(REPORTS)
	@$(H5) $(REPORTS)/lenet_seq_lr.h5 $(REPORTS)/lenet_sweep.h5 $(REPORTS)/lenet_seq_ref.h5 $(REPORTS)/lenet_sweep_tuned.h5 $(REPORTS)/lenet_ablation_apply.h5
	$(REPRO) adasum-lenet $(REPORTS)/lenet_seq_lr.h5 $(REPORTS)/lenet_sweep.h5 $(REPORTS)/lenet_seq_ref.h5 $(REPORTS)/lenet_sweep_tuned.h5 $(REPORTS)/lenet_ablation_apply.h5 --out $(REPORTS)

# R2: Adasum arXiv 3.7 Fig. 2; ~47 CPU-min (5 seeds, one rank) on 2 cores
adasum-seq-error: build | $(REPORTS)
	@$(H5) $(REPORTS)/seq_emulation.h5
	$(REPRO) adasum-seq-error $(REPORTS)/seq_emulation.h5 --out $(REPORTS)

# R3: Adasum arXiv 3.6 Fig. 1; MLSys 5.1.3 Fig. 2; ~67 CPU-min (LeNet-5 ~2, the ResNet arm ~65) on 2 cores
adasum-orthogonality: build | $(REPORTS)
	@$(H5) $(REPORTS)/orthogonality.h5 $(REPORTS)/orthogonality_resnet.h5
	$(REPRO) adasum-orthogonality $(REPORTS)/orthogonality.h5 $(REPORTS)/orthogonality_resnet.h5 --out $(REPORTS)

# R4: Adasum MLSys 5.1.1 Fig. 1; arXiv 4.2.3 Fig. 4; ~4 min on 2 cores
adasum-latency: build | $(REPORTS)
	@start=$$(date +%s); \
	for i in 1 2 3 4 5; do echo "# repetition $$i"; $(MPIRUN) -n 2 $(BUILD)/bench_collectives || exit 1; done > $(REPORTS)/adasum-latency.txt.tmp || exit 1; \
	mv $(REPORTS)/adasum-latency.txt.tmp $(REPORTS)/adasum-latency.txt; \
	$(REPRO) adasum-latency $(REPORTS)/adasum-latency.txt --out $(REPORTS) --elapsed $$(( $$(date +%s) - start ))

# R5: Horovod AdaSum guide, 'Square and Cubic optimization'; ~2 min on 2 cores
adasum-toy: build | $(REPORTS)
	@$(H5) $(REPORTS)/adasum_toy.h5 $(REPORTS)/adasum_toy_cubic.h5
	$(REPRO) adasum-toy $(REPORTS)/adasum_toy.h5 $(REPORTS)/adasum_toy_cubic.h5 --out $(REPORTS)

# R6: Adasum MLSys 5.2.2 (Table 4; the Adam and LAMB claims 5.2.1, Table 2); arXiv 1; ~20 min on 2 cores
adasum-optimizers: build | $(REPORTS)
	@$(H5) $(REPORTS)/optimizers_small.h5 $(REPORTS)/optimizers.h5
	$(REPRO) adasum-optimizers $(REPORTS)/optimizers_small.h5 $(REPORTS)/optimizers.h5 --out $(REPORTS)

# R11: Adasum arXiv 5.2.2-5.2.3 Table 2; ~100 min on 2 cores
adasum-local-steps: build | $(REPORTS)
	@$(H5) $(REPORTS)/adasum_local_steps_select.h5 $(REPORTS)/adasum_local_steps.h5 $(REPORTS)/adasum_local_steps_ablation.h5 $(REPORTS)/adasum_local_steps_long.h5
	$(REPRO) adasum-local-steps $(REPORTS)/adasum_local_steps_select.h5 $(REPORTS)/adasum_local_steps.h5 $(REPORTS)/adasum_local_steps_ablation.h5 $(REPORTS)/adasum_local_steps_long.h5 --out $(REPORTS)

# R12: Horovod AdaSum guide, 'Higher accuracy with the same number of steps'; ~140 min on 2 cores
adasum-guide: build | $(REPORTS)
	@$(H5) $(REPORTS)/adasum_guide_lr.h5 $(REPORTS)/adasum_guide.h5 $(REPORTS)/adasum_guide_base.h5 $(REPORTS)/adasum_guide_ablation.h5
	$(REPRO) adasum-guide $(REPORTS)/adasum_guide_lr.h5 $(REPORTS)/adasum_guide.h5 $(REPORTS)/adasum_guide_base.h5 $(REPORTS)/adasum_guide_ablation.h5 --out $(REPORTS)

# R7: LPP-SGD paper Table 1 (recipes Table 13); ~9 CPU-h (151 runs, 26,912 epochs at ~1.2 s each on a Zen 5 core, the ablation's 15 included; measured sum of run wall times 21.8 h at nice 19 beside other jobs) on 2 cores
lpp-table1: build | $(REPORTS)
	@$(H5) $(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select.h5 $(REPORTS)/lpp_table1_plateau_dp.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_table1_plateau_lpp.h5 $(REPORTS)/lpp_plateau_time.h5 $(REPORTS)/lpp_table1_plateau_ablation.h5
	$(REPRO) lpp-table1 $(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select.h5 $(REPORTS)/lpp_table1_plateau_dp.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_table1_plateau_lpp.h5 $(REPORTS)/lpp_plateau_time.h5 $(REPORTS)/lpp_table1_plateau_ablation.h5 --out $(REPORTS)

# R8: LPP-SGD paper Tables 3-4; ~6 CPU-h (121 runs, 17,312 epochs, R7's probe, selection and LAP file shared; measured sum of run wall times 12.9 h at nice 19 beside other jobs) on 2 cores
lpp-frequency: build | $(REPORTS)
	@$(H5) $(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_frequency_plateau_k.h5 $(REPORTS)/lpp_plateau_time.h5
	$(REPRO) lpp-frequency $(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_frequency_plateau_k.h5 $(REPORTS)/lpp_plateau_time.h5 --out $(REPORTS)

# R13: LPP-SGD paper Table 9 (with Table 1's rows it compares against); ~2.7 CPU-h (36 runs, 6,560 epochs at ~1.5 s each with LARS at B_loc 1024 on a Zen 5 core, the ablation's 10 included, R7's runs reused; measured sum of run wall times 4.4 h at nice 19 beside R7's ablation, the ablation's last 4 runs at mpirun -n 2, one worker a rank) on 2 cores
lpp-table9: build | $(REPORTS)
	@$(H5) $(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select_lars.h5 $(REPORTS)/lpp_table9_plateau.h5 $(REPORTS)/lpp_table1_plateau_dp.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_table1_plateau_lpp.h5 $(REPORTS)/lpp_table9_plateau_ablation.h5
	$(REPRO) lpp-table9 $(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select_lars.h5 $(REPORTS)/lpp_table9_plateau.h5 $(REPORTS)/lpp_table1_plateau_dp.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_table1_plateau_lpp.h5 $(REPORTS)/lpp_table9_plateau_ablation.h5 --out $(REPORTS)

# R7b: LPP-SGD paper Table 1 (MB-SGD rows; caption's LR rule); ~3.6 CPU-h (20 runs, 6,400 epochs at 500-720 s a run on a Zen 5 core beside other jobs) on 2 cores
lpp-table1-rule: build | $(REPORTS)
	@$(H5) $(REPORTS)/lpp_table1_paper_rule.h5 $(REPORTS)/lpp_table1_paper_rule_confirm.h5
	$(REPRO) lpp-table1-rule $(REPORTS)/lpp_table1_paper_rule.h5 $(REPORTS)/lpp_table1_paper_rule_confirm.h5 --out $(REPORTS)

# R9: Adaptive SGD paper Figs. 6-7; ~12 min on 2 cores
adaptive-figures: build | $(REPORTS)
	@$(H5) $(REPORTS)/adaptive_xml.h5 $(REPORTS)/adaptive_xml_lr.h5 $(REPORTS)/adaptive_xml_lr_all.h5
	$(REPRO) adaptive-figures $(REPORTS)/adaptive_xml.h5 $(REPORTS)/adaptive_xml_lr.h5 $(REPORTS)/adaptive_xml_lr_all.h5 --out $(REPORTS)

# R9: Adaptive SGD paper Figs. 6-7; ~3 min on 2 cores
adaptive-bibtex: build | $(REPORTS)
	@test -e ../shared/data/xml/bibtex/train.txt || { echo "adaptive-bibtex: needs ../shared/data/xml/bibtex/train.txt" >&2; exit 2; }
	@$(H5) $(REPORTS)/adaptive_xml_bibtex.h5 $(REPORTS)/adaptive_xml_bibtex_lr.h5
	$(REPRO) adaptive-bibtex $(REPORTS)/adaptive_xml_bibtex.h5 $(REPORTS)/adaptive_xml_bibtex_lr.h5 --out $(REPORTS)

# R10: Adaptive SGD paper Figs. 9-12; ~7 min on 2 cores
adaptive-sensitivity: build | $(REPORTS)
	@$(H5) $(REPORTS)/adaptive_sensitivity.h5
	$(REPRO) adaptive-sensitivity $(REPORTS)/adaptive_sensitivity.h5 --out $(REPORTS)

# R14: DiLoCo arXiv:2311.08105 Table 2 / Figure 2, Figures 4-6, Table 3; ~34 CPU-min (36 runs, one rank) on 2 cores
diloco-lm: build | $(REPORTS)
	@$(H5) $(REPORTS)/diloco_lm_main.h5 $(REPORTS)/diloco_lm_updates.h5 $(REPORTS)/diloco_lm_h.h5 $(REPORTS)/diloco_lm_outer.h5 $(REPORTS)/diloco_lm_iid.h5 $(REPORTS)/diloco_lm_replicas.h5
	$(REPRO) diloco-lm $(REPORTS)/diloco_lm_main.h5 $(REPORTS)/diloco_lm_updates.h5 $(REPORTS)/diloco_lm_h.h5 $(REPORTS)/diloco_lm_outer.h5 $(REPORTS)/diloco_lm_iid.h5 $(REPORTS)/diloco_lm_replicas.h5 --out $(REPORTS)

# R15: Streaming DiLoCo arXiv:2501.18512 sections 2.2-2.4, 3.1, Figures 5 and 8, Tables 1, 4 and 5; ~170 CPU-min (428 runs, one rank) on 2 cores
streaming-diloco: build | $(REPORTS)
	@$(H5) $(REPORTS)/streaming_lm_outer_lr.h5 $(REPORTS)/streaming_lm_base.h5 $(REPORTS)/streaming_lm_overlap.h5 $(REPORTS)/streaming_lm_quant.h5 $(REPORTS)/streaming_lm_full.h5 $(REPORTS)/streaming_lm_confirm.h5 $(REPORTS)/streaming_lm_overlap_confirm.h5
	$(REPRO) streaming-diloco $(REPORTS)/streaming_lm_outer_lr.h5 $(REPORTS)/streaming_lm_base.h5 $(REPORTS)/streaming_lm_overlap.h5 $(REPORTS)/streaming_lm_quant.h5 $(REPORTS)/streaming_lm_full.h5 $(REPORTS)/streaming_lm_confirm.h5 $(REPORTS)/streaming_lm_overlap_confirm.h5 --out $(REPORTS)

# the specs of experiments/adaptive/ run on one rank
$(REPORTS)/adaptive_xml.h5 $(REPORTS)/adaptive_xml_lr.h5 $(REPORTS)/adaptive_xml_lr_all.h5 $(REPORTS)/adaptive_xml_bibtex.h5 $(REPORTS)/adaptive_xml_bibtex_lr.h5 $(REPORTS)/adaptive_sensitivity.h5: $(REPORTS)/%.h5: experiments/adaptive/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n 1 $(WB) run $< -o $@ $(if $(wildcard $@.journal),--resume,--force) --quiet

# the specs of experiments/adasum/ run on one rank
$(REPORTS)/seq_emulation.h5 $(REPORTS)/adasum_toy.h5 $(REPORTS)/adasum_toy_cubic.h5 $(REPORTS)/optimizers_small.h5 $(REPORTS)/optimizers.h5 $(REPORTS)/adasum_local_steps_select.h5 $(REPORTS)/adasum_local_steps.h5 $(REPORTS)/adasum_local_steps_ablation.h5 $(REPORTS)/adasum_local_steps_long.h5 $(REPORTS)/adasum_guide_lr.h5 $(REPORTS)/adasum_guide.h5 $(REPORTS)/adasum_guide_base.h5 $(REPORTS)/adasum_guide_ablation.h5: $(REPORTS)/%.h5: experiments/adasum/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n 1 $(WB) run $< -o $@ $(if $(wildcard $@.journal),--resume,--force) --quiet

# the specs of experiments/diloco/ run on one rank
$(REPORTS)/diloco_lm_main.h5 $(REPORTS)/diloco_lm_updates.h5 $(REPORTS)/diloco_lm_h.h5 $(REPORTS)/diloco_lm_outer.h5 $(REPORTS)/diloco_lm_iid.h5 $(REPORTS)/diloco_lm_replicas.h5: $(REPORTS)/%.h5: experiments/diloco/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n 1 $(WB) run $< -o $@ $(if $(wildcard $@.journal),--resume,--force) --quiet

# the specs of experiments/lpp/ run on one rank
$(REPORTS)/lpp_plateau_probe_80.h5 $(REPORTS)/lpp_plateau_probe_160.h5 $(REPORTS)/lpp_plateau_probe.h5 $(REPORTS)/lpp_plateau_select.h5 $(REPORTS)/lpp_table1_plateau_dp.h5 $(REPORTS)/lpp_table1_plateau_lap.h5 $(REPORTS)/lpp_table1_plateau_lpp.h5 $(REPORTS)/lpp_plateau_time.h5 $(REPORTS)/lpp_table1_plateau_ablation.h5 $(REPORTS)/lpp_frequency_plateau_k.h5 $(REPORTS)/lpp_plateau_select_lars.h5 $(REPORTS)/lpp_table9_plateau.h5 $(REPORTS)/lpp_table9_plateau_ablation.h5 $(REPORTS)/lpp_table1_paper_rule.h5 $(REPORTS)/lpp_table1_paper_rule_confirm.h5: $(REPORTS)/%.h5: experiments/lpp/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n 1 $(WB) run $< -o $@ $(if $(wildcard $@.journal),--resume,--force) --quiet

# the specs of experiments/streaming/ run on one rank
$(REPORTS)/streaming_lm_outer_lr.h5 $(REPORTS)/streaming_lm_base.h5 $(REPORTS)/streaming_lm_overlap.h5 $(REPORTS)/streaming_lm_quant.h5 $(REPORTS)/streaming_lm_full.h5 $(REPORTS)/streaming_lm_confirm.h5 $(REPORTS)/streaming_lm_overlap_confirm.h5: $(REPORTS)/%.h5: experiments/streaming/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n 1 $(WB) run $< -o $@ $(if $(wildcard $@.journal),--resume,--force) --quiet

# the specs of experiments/adasum/ run on $(NP) ranks
$(REPORTS)/lenet_seq_lr.h5 $(REPORTS)/lenet_sweep.h5 $(REPORTS)/lenet_seq_ref.h5 $(REPORTS)/lenet_sweep_tuned.h5 $(REPORTS)/lenet_ablation_apply.h5 $(REPORTS)/orthogonality.h5 $(REPORTS)/orthogonality_resnet.h5: $(REPORTS)/%.h5: experiments/adasum/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n $(NP) $(WB) run $< -o $@ $(if $(wildcard $@.journal),--resume,--force)

# written by scripts/lpp_plateau_specs.py (git-ignored; catalog.GENERATED holds its arguments)
experiments/lpp/lpp_plateau_probe.json experiments/lpp/lpp_plateau_select.json experiments/lpp/lpp_table1_plateau_dp.json experiments/lpp/lpp_plateau_select_lars.json experiments/lpp/lpp_table9_plateau.json experiments/lpp/lpp_table9_plateau_ablation.json experiments/lpp/lpp_table1_plateau_lap.json experiments/lpp/lpp_table1_plateau_lpp.json experiments/lpp/lpp_frequency_plateau_k.json experiments/lpp/lpp_table1_plateau_ablation.json experiments/lpp/lpp_plateau_time.json experiments/lpp/lpp_table1_paper_rule.json &: scripts/lpp_plateau_specs.py
	$(PY) scripts/lpp_plateau_specs.py --epochs 320 --probe-epochs 320 --alpha0 '{"dp": 0.02, "dp1024": 0.0025, "lap": 0.01, "lpp": 0.005, "lars1024": 1.6}' --out experiments/lpp

SPECS_GENERATED := experiments/lpp/lpp_plateau_probe.json experiments/lpp/lpp_plateau_select.json experiments/lpp/lpp_table1_plateau_dp.json experiments/lpp/lpp_plateau_select_lars.json experiments/lpp/lpp_table9_plateau.json experiments/lpp/lpp_table9_plateau_ablation.json experiments/lpp/lpp_table1_plateau_lap.json experiments/lpp/lpp_table1_plateau_lpp.json experiments/lpp/lpp_frequency_plateau_k.json experiments/lpp/lpp_table1_plateau_ablation.json experiments/lpp/lpp_plateau_time.json experiments/lpp/lpp_table1_paper_rule.json
.PHONY: specs
specs: $(SPECS_GENERATED)

