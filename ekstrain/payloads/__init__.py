"""Plain-dict payloads the components register: Karpenter NodePools and EC2NodeClasses, the health gate's objects, Argo
CD's, the FSx static volume, KMS key policies."""
