# mk/analysis.mk: the analysis notebook, executed by Jupyter.
#
#   make -f Makefile.experiments notebook   ~30 s: runs analysis/notebooks/notebook_sweep.json
#                                            (8 short LeNet-5 runs, 2 ranks) into $(NOTEBOOK_OUT)/
#                                            and executes analysis/notebooks/adasum.ipynb on it
#                                            with `jupyter nbconvert --to notebook --execute`;
#                                            fails if any cell raises
#
# Part of `make test` (EXTRA_TEST_TARGETS). nbconvert exits non-zero, naming the cell and its
# traceback, when any cell raises. PYDEVD_DISABLE_FILE_VALIDATION quiets ipykernel's debugger
# warning about frozen modules (noise, not an error). The notebook must match its generator
# (analysis/notebooks/build_notebook.py --check). The executed copy, with its tables and
# figures, is left at $(NOTEBOOK_OUT)/adasum.ipynb. PSGD_REPORTS points at an empty folder,
# so the sections that redraw reports/*.h5 skip and the step's time does not depend on what
# a developer's reports/ holds.

NOTEBOOK_OUT ?= $(OUT)/notebook
JUPYTER      ?= $(PY) -m jupyter

.PHONY: notebook

notebook: build
	@$(PY) -c "import pandas, nbconvert, ipykernel" 2>/dev/null || { \
	  echo "notebook: $(PY) lacks pandas, nbconvert or ipykernel (Debian: python3-pandas" \
	       "jupyter-nbconvert python3-ipykernel; scripts/install-deps.sh installs them)" >&2; exit 1; }
	$(PY) analysis/notebooks/build_notebook.py --check
	@rm -rf $(NOTEBOOK_OUT) && mkdir -p $(NOTEBOOK_OUT)/reports
	$(MPIRUN) -n $(if $(filter 1,$(NP)),1,2) $(WB) run analysis/notebooks/notebook_sweep.json \
	  -o $(NOTEBOOK_OUT)/notebook_sweep.h5 --force --quiet
	PSGD_RESULTS=$(abspath $(NOTEBOOK_OUT))/notebook_sweep.h5 PSGD_REPORTS=$(abspath $(NOTEBOOK_OUT))/reports \
	PYDEVD_DISABLE_FILE_VALIDATION=1 $(JUPYTER) nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 \
	  --output-dir $(NOTEBOOK_OUT) --output adasum.ipynb analysis/notebooks/adasum.ipynb

EXTRA_TEST_TARGETS += notebook
