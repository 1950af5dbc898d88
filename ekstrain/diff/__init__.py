"""Offline change preview: compare two recordings of the program resource by resource (pure logic).

``model`` holds one recorded resource and its identity (the URN without the stack prefix), ``rules``
the one cited table of what each resource type replaces on, what Karpenter treats as drift and what
is stateful or named; ``compare`` classes each change; ``report`` renders Markdown and JSON.
``sides`` runs the program to get the recordings (in a process: cli/record.py, infra/diff.py); the command line
``ekstrain diff`` is ekstrain/cli/diff.py.
"""
