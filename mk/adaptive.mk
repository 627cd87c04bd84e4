# mk/adaptive.mk: the Adaptive SGD paper's figures (issue 9; DESIGN.md section 11, R9-R10;
# papers/adaptive-sgd-heterogeneous-gpus.txt, section 5). Times with NP=2 on 2 cores:
#
#   make -f Makefile.experiments adaptive-figures       R9   ~12 min (216 runs: 4 lr x 3 workers x
#                                                       6 arms x 3 seeds; per-arm lr on the validation split)
#   make -f Makefile.experiments adaptive-sensitivity   R10  ~7 min (108 runs: 18 variants x 2/4 workers
#                                                       x 3 seeds)
#   make -f Makefile.experiments adaptive-bibtex        R9 on ../shared/data/xml/bibtex (~12 min;
#                                                       needs the data, fails with exit 2 without it)
#
# Each target reruns its experiment into $(OUT)/<spec>.h5 and writes
# $(ADAPTIVE_REPORTS)/adaptive-<target>.md/.csv/.png (+ -lr.png, -workers.png) through
# analysis/adaptive_report.py.

ADAPTIVE_REPORTS ?= reports
ADAPTIVE_REPORT   = $(PY) analysis/adaptive_report.py

.PHONY: adaptive-figures adaptive-sensitivity adaptive-bibtex

adaptive-figures: build | $(OUT)
	@mkdir -p $(ADAPTIVE_REPORTS)
	$(MPIRUN) -n $(NP) $(WB) run experiments/adaptive_xml.json -o $(OUT)/adaptive_xml.h5 --force --quiet
	$(ADAPTIVE_REPORT) figures $(OUT)/adaptive_xml.h5 $(ADAPTIVE_REPORTS)/adaptive-figures

adaptive-sensitivity: build | $(OUT)
	@mkdir -p $(ADAPTIVE_REPORTS)
	$(MPIRUN) -n $(NP) $(WB) run experiments/adaptive_sensitivity.json -o $(OUT)/adaptive_sensitivity.h5 --force --quiet
	$(ADAPTIVE_REPORT) sensitivity $(OUT)/adaptive_sensitivity.h5 $(ADAPTIVE_REPORTS)/adaptive-sensitivity

adaptive-bibtex: build | $(OUT)
	@mkdir -p $(ADAPTIVE_REPORTS)
	$(MPIRUN) -n $(NP) $(WB) run experiments/adaptive_xml_bibtex.json -o $(OUT)/adaptive_xml_bibtex.h5 --force --quiet
	$(ADAPTIVE_REPORT) figures $(OUT)/adaptive_xml_bibtex.h5 $(ADAPTIVE_REPORTS)/adaptive-bibtex
