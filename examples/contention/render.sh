#!/usr/bin/env bash
# The workloads of examples/mix-prod-contention.yaml that the seed examples (examples/render-all.sh) do not
# have: several teams' jobs of every scheduler kind on prod's shared partitions, one `ekstrain job render`
# each, every object validated against the pinned upstream schemas (--validate).
#
#   examples/contention/render.sh [OUT_DIR]     # default build/examples-contention
#
# Team names are only in the job names: each job goes through its partition's Volcano queue (docs/schedulers.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-build/examples-contention}"
EKSTRAIN="${EKSTRAIN:-.venv/bin/ekstrain}"
GPU_IMAGE=763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-ec2
NEURON_IMAGE=763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.5.1-neuronx-py310-sdk2.21.0-ubuntu22.04
RAY_IMAGE=111122223333.dkr.ecr.us-west-2.amazonaws.com/ekstrain/ray-train:2.44.1-cu124-efa
mkdir -p "$OUT"
common=(--stack prod --validate)
# team research: a Kubeflow TrainJob (torch-distributed-gpu-a100 runtime) on 8 x p4d.24xlarge.
"$EKSTRAIN" job render "${common[@]}" --scheduler trainjob --partition gpu-a100 --nodes 8 --model llama3-8b --global-batch 256 --seq-len 4096 --image "$GPU_IMAGE" --script /fsx/code/train_fsdp.py --name research-llama3-8b-trainjob --out "$OUT/research-trainjob.yaml"
# team vision: a Volcano gang Job on 4 x p4d.24xlarge.
"$EKSTRAIN" job render "${common[@]}" --scheduler volcano --partition gpu-a100 --nodes 4 --model llama3-8b --global-batch 256 --seq-len 4096 --image "$GPU_IMAGE" --script /fsx/code/train_fsdp.py --name vision-llama3-8b-volcano --out "$OUT/vision-volcano.yaml"
# team nlp: a second Slurm fine-tune, on 2 x p5.48xlarge (the NodeSet gpu-h100 scales for it through KEDA).
"$EKSTRAIN" job render --stack prod --scheduler slurm --partition gpu-h100 --nodes 2 --model llama3-8b --lora-rank 16 --global-batch 64 --seq-len 4096 --image "$GPU_IMAGE" --script /shared/code/finetune.py --name nlp-llama3-8b-lora-h100 --out "$OUT/nlp-llama3-8b-lora-h100.sbatch"
# team bio: a RayJob on 2 x p5.48xlarge.
"$EKSTRAIN" job render "${common[@]}" --scheduler rayjob --partition gpu-h100 --nodes 2 --model llama3-8b --global-batch 128 --seq-len 4096 --image "$RAY_IMAGE" --script /fsx/code/train_fsdp.py --name bio-llama3-8b-ray --out "$OUT/bio-rayjob.yaml"
# team neuron: an MPIJob-free Trainium run on 8 x trn1n.32xlarge (the other EFA layout of the partition).
"$EKSTRAIN" job render "${common[@]}" --scheduler trainium --partition trainium --instance-type trn1n.32xlarge --nodes 8 --model llama3-8b --lora-rank 16 --framework neuronx-distributed --global-batch 256 --seq-len 4096 --image "$NEURON_IMAGE" --script /fsx/code/nxd_lora.py --name neuron-llama3-8b-trn1n --out "$OUT/neuron-trn1n.yaml"
echo "rendered $(ls "$OUT" | wc -l) files into $OUT"
