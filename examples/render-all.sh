#!/usr/bin/env bash
# The seed example workloads and the per-partition NCCL health checks, one command each, every
# object validated against the pinned upstream schemas (--validate).
#
#   examples/render-all.sh [OUT_DIR]          # default build/examples
#
# Needs the upstream schemas (EKSTRAIN_UPSTREAM_DIR or `make fetch-upstream`) and the planner.
# Images are examples: pin your own (digests) in real runs. See examples/README.md and docs/jobs.md.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-build/examples}"
EKSTRAIN="${EKSTRAIN:-.venv/bin/ekstrain}"
GPU_IMAGE=763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-ec2
NEURON_IMAGE=763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training-neuronx:2.5.1-neuronx-py310-sdk2.21.0-ubuntu22.04
RAY_IMAGE=111122223333.dkr.ecr.us-west-2.amazonaws.com/ekstrain/ray-train:2.44.1-cu124-efa
BIONEMO_IMAGE=nvcr.io/nvidia/clara/bionemo-framework:1.5  # = ekstrain/facts/versions.py BIONEMO_IMAGE (a test checks)
mkdir -p "$OUT"

# 1. Llama 3 70B fine-tune on 4 x p4d.24xlarge (32 x A100 40GB) via Slurm. A full fine-tune does not
#    fit comfortably (see examples/README.md): the planner sizes a LoRA fine-tune (r=16) instead.
"$EKSTRAIN" job render --stack prod --scheduler slurm --partition gpu-a100 --nodes 4 --model llama3-70b --lora-rank 16 --framework fsdp --global-batch 64 --seq-len 4096 --image "$GPU_IMAGE" --script /shared/code/finetune.py --name llama3-70b-lora --out "$OUT/llama3-70b-lora.sbatch"
# 2. BERT-large with MPI (one rank per GPU) on 4 x p4d.24xlarge.
"$EKSTRAIN" job render --stack prod --scheduler mpijob --partition gpu-a100 --nodes 4 --model bert-large --framework deepspeed --global-batch 4096 --seq-len 512 --image "$GPU_IMAGE" --script /fsx/code/bert_pretrain.py --name bert-large-mpi --validate --out "$OUT/bert-large-mpijob.yaml"
# 3. Llama 3 8B LoRA on 4 x trn1.32xlarge (128 NeuronCores), neuronx-distributed, Indexed Job.
"$EKSTRAIN" job render --stack prod --scheduler trainium --partition trainium --instance-type trn1.32xlarge --nodes 4 --model llama3-8b --lora-rank 16 --framework neuronx-distributed --global-batch 256 --seq-len 4096 --image "$NEURON_IMAGE" --script /fsx/code/nxd_lora.py --name llama3-8b-lora-trn --validate --out "$OUT/llama3-8b-lora-trainium.yaml"
# 4. Ray Train (TorchTrainer) on 4 x p5.48xlarge.
"$EKSTRAIN" job render --stack prod --scheduler rayjob --partition gpu-h100 --nodes 4 --model llama3-8b --global-batch 256 --seq-len 8192 --image "$RAY_IMAGE" --script /fsx/code/train_fsdp.py --name llama3-8b-ray --validate --out "$OUT/llama3-8b-rayjob.yaml"
# 5. Volcano gang job: Llama 3 70B with Megatron on 8 x p5.48xlarge, queue gpu-h100.
"$EKSTRAIN" job render --stack prod --scheduler volcano --partition gpu-h100 --nodes 8 --model llama3-70b --framework megatron --global-batch 512 --seq-len 8192 --image "$GPU_IMAGE" --script /fsx/code/Megatron-LM/pretrain_gpt.py --name llama3-70b-megatron --validate --out "$OUT/llama3-70b-volcano.yaml"
# 6. BioNeMo molecule generation: MolMIM pre-training on 2 x p5.48xlarge (Volcano gang job, NeMo/Hydra
#    overrides carry the planner's micro-batch and TP/PP; SMILES data under /fsx/data/zinc15).
"$EKSTRAIN" job render --stack prod --scheduler bionemo --partition gpu-h100 --nodes 2 --model molmim-70m --global-batch 2048 --seq-len 128 --image "$BIONEMO_IMAGE" --name molmim-pretrain --validate --out "$OUT/molmim-bionemo.yaml"
# The sbatch of example 1 as a ConfigMap (for GitOps), validated.
"$EKSTRAIN" job render --stack prod --scheduler slurm --configmap --partition gpu-a100 --nodes 4 --model llama3-70b --lora-rank 16 --framework fsdp --global-batch 64 --seq-len 4096 --image "$GPU_IMAGE" --script /shared/code/finetune.py --name llama3-70b-lora --validate --out "$OUT/llama3-70b-lora-sbatch-configmap.yaml"

# Pre-flight all-reduce health checks, one per prod partition (run before long jobs).
"$EKSTRAIN" job render --stack prod --scheduler nccl-test --partition gpu-a100 --validate --out "$OUT/nccl-check-gpu-a100.yaml"
"$EKSTRAIN" job render --stack prod --scheduler nccl-test --partition gpu-h100 --validate --out "$OUT/nccl-check-gpu-h100.yaml"
"$EKSTRAIN" job render --stack prod --scheduler nccl-test --partition trainium --validate --out "$OUT/nccl-check-trainium.yaml"

echo "rendered $(ls "$OUT" | wc -l) files into $OUT"
