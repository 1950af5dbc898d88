"""The ``ekstrain`` command line: every command's code, and nothing else, lives here.

    main.py      the Click tree (``ekstrain``, ``--version``, exit codes), ``catalog`` and ``render``
    render.py    ``ekstrain render``'s process (``python -m ekstrain.cli.render``): flags, stage lines, summary
    plan.py      ``ekstrain plan search|evaluate|calibrate``   (the planner: ekstrain/planner)
    job.py       ``ekstrain job render|schedulers``            (the job templates: assembly/jobs)
    simulate.py  ``ekstrain simulate`` and ``--timeline``      (the simulator: ekstrain/simulate)
    diff.py      ``ekstrain diff``                             (the comparison: ekstrain/diff)
    record.py    the process that records one side of a diff   (the recording: infra/diff.py)
    storage.py   ``ekstrain storage``                          (the sizing model: ekstrain/layout/storage_sizing.py)
    reference.py ``python -m ekstrain.cli.reference catalog|configuration``: the generated docs/ pages
    kit.py       Click pieces every command shares (argparse declarations -> Click, one-line errors, tables)
    argtypes.py  argparse ``type=`` functions (positive numbers, images, namespaces, output files)

The domain packages hold the logic and no argument parsing or printing (tests/cli/test_cli_room.py). This package is
the top layer: it may import every other one and none imports it (tests/test_import_graph.py). Importing it loads
nothing; ``ekstrain.cli.main`` loads Click.
"""
