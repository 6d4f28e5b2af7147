"""The load and class harness: clients and drivers that benchmarks (bench/) and tests share.
A Streamlit session without a browser (`ws_client`), a class's teacher and students over it
(`class_client`) or in Chromium (`class_browsers`), the app served for a run (`serve`), the
load bench's page script, samplers and report (`load_tools`, `load_report`, `ws_load`), the
hostile mix (`hostile_mix`), the event loop's lag (`loop_lag`) and page screenshots
(`screens`). Import it as `tests.harness.<module>` with the repository root on sys.path."""
