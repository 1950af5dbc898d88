#!/usr/bin/env bash
# The workloads of examples/mix-topology-prod.yaml: two 64-GPU gangs (8 x p4d.24xlarge each) on prod's gpu-a100,
# one `ekstrain job render` each, every object validated against the pinned upstream schemas (--validate).
#
#   examples/topology/render.sh [OUT_DIR]     # default build/examples-topology
#
# The Megatron plan sends pipeline traffic between nodes: its Volcano Job asks networkTopology hard within tier 2.
# The DeepSpeed data-parallel MPIJob's workers prefer one network node (podAffinity on the EKS network-node-layer
# labels; the MPI operator builds its own PodGroup, which cannot carry networkTopology). ekstrain/layout/topology.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-build/examples-topology}"
EKSTRAIN="${EKSTRAIN:-.venv/bin/ekstrain}"
GPU_IMAGE=763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-ec2
mkdir -p "$OUT"
common=(--stack prod --validate --partition gpu-a100 --nodes 8 --image "$GPU_IMAGE")
"$EKSTRAIN" job render "${common[@]}" --scheduler volcano --model llama3-70b --framework megatron --global-batch 512 --seq-len 4096 --script /fsx/code/Megatron-LM/pretrain_gpt.py --name llama3-70b-pipeline --out "$OUT/llama3-70b-pipeline-volcano.yaml"
"$EKSTRAIN" job render "${common[@]}" --scheduler mpijob --model bert-large --framework deepspeed --global-batch 8192 --seq-len 512 --script /fsx/code/bert_pretrain.py --name bert-large-dp --out "$OUT/bert-large-dp-mpijob.yaml"
echo "rendered $(ls "$OUT" | wc -l) files into $OUT"
