#!/usr/bin/env bash
# The workloads of examples/mix-reserved-teams.yaml: teams llm and research (schedulers.volcano.teams of
# examples/stacks/Pulumi.reserved.yaml) and work of no team on the example's reserved partitions, one
# `ekstrain job render` each (--team puts a job in its team's queue <partition>-<team>), validated.
#
#   examples/contention/render-teams.sh [OUT_DIR]     # default build/examples-reserved
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-build/examples-reserved}"
EKSTRAIN="${EKSTRAIN:-.venv/bin/ekstrain}"
GPU_IMAGE=763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-ec2
mkdir -p "$OUT"
stack=(--stack reserved --stack-file examples/stacks/Pulumi.reserved.yaml)
common=("${stack[@]}" --image "$GPU_IMAGE" --validate)
# research borrows: 4 x p5en in the Capacity Block (2 guaranteed + 2 nobody is guaranteed).
"$EKSTRAIN" job render "${common[@]}" --team research --scheduler volcano --partition gpu-h200 --nodes 4 --model llama3-8b --global-batch 256 --seq-len 4096 --name research-h200 --out "$OUT/research-h200.yaml"
# llm's guarantee: 4 x p5en, admitted the minute it arrives although research borrowed the rest.
"$EKSTRAIN" job render "${common[@]}" --team llm --scheduler volcano --partition gpu-h200 --nodes 4 --model llama3-70b --framework megatron --global-batch 512 --seq-len 8192 --name llm-h200 --out "$OUT/llm-h200.yaml"
# llm's TrainJob on its 2 guaranteed p5 of the ODCR.
"$EKSTRAIN" job render "${common[@]}" --team llm --scheduler trainjob --partition gpu-h100 --nodes 2 --model llama3-8b --global-batch 128 --seq-len 4096 --name llm-h100-trainjob --out "$OUT/llm-h100-trainjob.yaml"
# research's MPIJob on its 2 guaranteed on-demand p4d.
"$EKSTRAIN" job render "${common[@]}" --team research --scheduler mpijob --partition gpu-a100 --nodes 2 --model bert-large --framework deepspeed --global-batch 2048 --seq-len 512 --name research-bert --out "$OUT/research-bert.yaml"
# Work of no team (<partition>-shared): a Slurm fine-tune on 2 x p5en and a RayJob on 1 x p5.
"$EKSTRAIN" job render "${stack[@]}" --image "$GPU_IMAGE" --scheduler slurm --partition gpu-h200 --nodes 2 --model llama3-8b --lora-rank 16 --global-batch 64 --seq-len 4096 --script /shared/code/finetune.py --name shared-ft-h200 --out "$OUT/shared-ft-h200.sbatch"
"$EKSTRAIN" job render "${common[@]}" --scheduler rayjob --partition gpu-h100 --nodes 1 --model llama3-8b --global-batch 64 --seq-len 4096 --name shared-ray --out "$OUT/shared-ray.yaml"
echo "rendered $(ls "$OUT" | wc -l) files into $OUT"
